"""`wikiqa ask` and `wikiqa serve`: the agent itself, once from the shell or behind HTTP.

Model and source default to the environment (`Settings`), so both commands pick the same ones.
"""

from __future__ import annotations

import argparse
import sys

from wikiqa.agent import AgentResult, Answer, TraceEvent
from wikiqa.cli.common import (
    EXIT_UNAVAILABLE,
    MODEL_HELP,
    SOURCE_HELP,
    CliError,
    add_agent_flags,
    agent_config,
    answering_model,
    positive_int,
    wiki_source,
)
from wikiqa.config import Settings
from wikiqa.terminal import echo


def _print_result(result: AgentResult) -> None:
    output = result.output
    if isinstance(output, Answer):
        echo(output.text)
        for i, c in enumerate(output.citations, start=1):
            echo(f'  [{i}] {c.title}: "{c.quote}"')
            echo(f"      {c.url}")
    else:
        echo(f"Refused ({output.reason_code}): {output.reason}")
    usage = result.usage
    cost = "n/a" if usage.estimated_cost_usd is None else f"${usage.estimated_cost_usd:.4f} (est.)"
    review = " · needs human review" if result.needs_human_review else ""
    echo(
        f"confidence {result.confidence:.2f} · {usage.tool_calls} tool calls · "
        f"{usage.model_calls} model calls · {usage.tokens.total} tokens · cost {cost} · "
        f"{result.latency_ms:.0f} ms{review}"
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from wikiqa.agent import Agent

    if not args.question.strip():
        raise CliError("the question is empty")  # bad input: exit 1, as documented

    model = answering_model(args.model or Settings().model)
    source = wiki_source(args.source or Settings().source)

    def stream(event: TraceEvent) -> None:
        echo(event.line(), file=sys.stderr, flush=True)

    config = agent_config(args)
    agent = Agent(model, source, config, on_event=stream if args.verbose else None)
    result = agent.ask(args.question)
    if args.json:
        echo(result.model_dump_json(indent=2))
    else:
        _print_result(result)
    return EXIT_UNAVAILABLE if result.infrastructure_error else 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from wikiqa.api.app import create_app
    from wikiqa.api.connections import guarded_protocol
    from wikiqa.api.shield import check_token
    from wikiqa.config import reveal

    settings = Settings()
    if args.rate_limit is not None:
        settings = settings.model_copy(update={"rate_limit": args.rate_limit})
    try:
        token = check_token(reveal(settings.api_token))  # an empty token is fatal, not "no auth"
    except ValueError as err:
        raise CliError(str(err)) from err
    model = answering_model(args.model or settings.model)
    source = wiki_source(args.source or settings.source)
    app = create_app(model, source, settings, agent_config(args))
    # Timeouts: first byte 5 s and request headers 10 s, then the per-client and total caps on
    # connections that have not yet made an authorised request (api/connections.py); idle
    # keep-alive 5 s; then (Shield) the per-client rate limit, and for token holders only the
    # body 10 s and 64 requests in flight: a request without the token is answered from its
    # headers. uvicorn's own limit_concurrency is off: it counted idle sockets, so a flood of
    # them starved token holders. Proxy headers only from proxies named: uvicorn trusts them from
    # loopback by default, and a client naming a new address in each X-Forwarded-For would be a
    # new client to the rate limit each time.
    proxies = args.forwarded_allow_ips
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=args.log_level, http=guarded_protocol(token),
        timeout_keep_alive=5, limit_concurrency=None, h11_max_incomplete_event_size=16 * 1024,
        proxy_headers=bool(proxies), forwarded_allow_ips=proxies or "",
    )  # fmt: skip
    return 0


def rate(text: str) -> float:
    """A rate limit: a number of requests a second, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected requests a second, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number 0 or more, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ask = sub.add_parser("ask", help="answer a question from Wikipedia, with citations")
    ask.add_argument("question")
    ask.add_argument("--model", help=MODEL_HELP + " (env WIKIQA_MODEL)")
    ask.add_argument("--source", help=SOURCE_HELP + " (env WIKIQA_SOURCE)")
    add_agent_flags(ask)
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ask.add_argument("-v", "--verbose", action="store_true", help="stream the trace to stderr")
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="serve POST /api/ask over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=positive_int, default=8000)
    serve.add_argument("--model", help=MODEL_HELP + " (env WIKIQA_MODEL)")
    serve.add_argument("--source", help=SOURCE_HELP + " (env WIKIQA_SOURCE)")
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.add_argument(
        "--rate-limit", type=rate, metavar="N",
        help="requests a second one client (its bearer token, or its address) may make, in "
        "bursts of 2N; over it: 429 with Retry-After; 0: no limit (env WIKIQA_RATE_LIMIT, "
        "default 10)",
    )  # fmt: skip
    serve.add_argument(
        "--forwarded-allow-ips", metavar="IPS",
        help="the proxies (comma-separated addresses) whose X-Forwarded-For names the client; "
        "default none: a client is the address it connects from",
    )  # fmt: skip
    add_agent_flags(serve)
    serve.set_defaults(func=cmd_serve)
