"""Build a model or a Wikipedia source from its spec string.

Specs are plain strings so the CLI, the environment, notebooks and recorded runs name models and
sources the same way. The registry sits above what it builds: providers and sources import their
protocols, never this module, so adding a provider cannot create an import cycle. Each branch
imports its implementation only when asked, so the offline path never loads an SDK or mwclient.

    model specs   extractive[:key=value,...]   offline deterministic policy (the default)
                  anthropic:<model>            Claude through the anthropic SDK
                  openai:<model>@<base_url>[;key=value,...]   any OpenAI-compatible server
                                               (option: tool_choice)
                  scripted:<file.json>         replays tool calls from a file (tests, drills)
    source specs  snapshot                     the pinned offline snapshot (the default)
                  live, live:<host>            MediaWiki
                  cassette:<run id | path>     replay a run's cassette exactly (?suite=any:
                                               on another suite too)
                  <path>                       a snapshot file (a recording of a live run)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from wikiqa.models import Model
from wikiqa.sources import WikiSource

__all__ = ["model_levers", "open_model", "open_source"]


def _options(text: str) -> dict[str, str]:
    options = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad model option {item!r}: expected key=value")
        options[key.strip()] = value.strip()
    return options


def model_levers(spec: str) -> tuple[str, str]:
    """What a model spec names, and the options it sets, without where the model is served:
    `openai:qwen2.5-coder-1.5b@http://127.0.0.1:8080/v1;tool_choice=required` is the model
    `qwen2.5-coder-1.5b` with `tool_choice=required` (another port serves the same model), and
    `extractive:abstain=0.4` is `extractive` with `abstain=0.4`: two runs of one model are
    comparable, their options are the levers a climb changes."""
    kind, _, rest = spec.partition(":")
    if kind == "openai" and rest:
        rest, _, options = rest.partition(";")
        at = re.search(r"@(?=https?://)", rest) or re.search(r"@[^@]*$", rest)
        return (rest[: at.start()] if at else rest), options
    if kind == "extractive":
        return kind, rest
    return (rest if kind == "anthropic" and rest else spec), ""


def is_served(spec: str) -> bool:
    """`local` or `local:<gguf>` (with `;options` after either): a local model whose server the
    command starts (`wikiqa.evals.running.served`), not a spec `open_model` opens."""
    base = spec.partition(";")[0]
    return base == "local" or (base.startswith("local:") and len(base) > len("local:"))


def open_model(
    spec: str = "extractive",
    api_key: str | None = None,
    *,
    max_tokens: int | None = None,
    timeout: float | None = None,
) -> Model:
    """Build a model from its spec string (imports each provider's SDK only when asked);
    `api_key` is an `openai:` server's own key (a local server's, started for this process),
    sent in place of the configured one. `max_tokens` (output tokens per call) and `timeout`
    (seconds per call) go to an API client (None: the settings'); other models take none."""
    kind, _, rest = spec.partition(":")
    if kind == "extractive":
        from wikiqa.models import ExtractiveModel

        return ExtractiveModel.from_options(_options(rest))
    if kind == "anthropic" and rest:
        from wikiqa.models.anthropic_model import AnthropicModel

        return AnthropicModel(rest, max_tokens=max_tokens, timeout=timeout)
    if kind == "openai" and rest:
        from wikiqa.models.openai_model import OpenAIModel

        rest, _, extra = rest.partition(";")  # options after the URL: `...@<url>;brief=1`
        # Split at the `@` that starts the URL: the URL may hold one too (`http://user:pw@host`).
        at = re.search(r"@(?=https?://)", rest) or re.search(r"@[^@]*$", rest)
        model, base_url = (rest[: at.start()], rest[at.start() + 1 :]) if at else (rest, "")
        return OpenAIModel(
            model, base_url=base_url or None, api_key=api_key, options=_options(extra),
            max_tokens=max_tokens, timeout=timeout,
        )  # fmt: skip
    if kind == "scripted" and rest:
        from wikiqa.models import ScriptedModel

        return ScriptedModel.from_file(rest)
    raise ValueError(
        f"unknown model spec {spec!r}: use extractive[:k=v,...], anthropic:<model>, "
        "openai:<model>@<base_url> or scripted:<file.json>"
    )


def _then_results(first: Sequence[Path]) -> Iterator[Path]:
    """`first`, then the results folder, found only when reached: a cassette named by its path
    needs no project (`wikiqa.project`) and no results folder."""
    from wikiqa.config import Settings

    yield from first
    yield Settings().results_dir()


def open_source(spec: str = "snapshot", results: Sequence[Path] = ()) -> WikiSource:
    """Open a source from its spec: `snapshot`, `live`, `live:<host>`, `cassette:<run id or
    path>`, or a snapshot file. A cassette's run id is looked up under `results` (a run's
    output folder), then the results folder, each with its scratch area."""
    if spec.startswith("cassette:"):
        from wikiqa.sources.cassette import CassetteSource, parse_spec
        from wikiqa.sources.cassette_files import find_cassette

        ref, any_suite = parse_spec(spec.removeprefix("cassette:"))
        if not ref:
            raise ValueError("cassette: needs a run id or a cassette file path")
        return CassetteSource(find_cassette(ref, _then_results(results)), any_suite=any_suite)
    if spec == "snapshot":
        from wikiqa.sources import SnapshotSource

        return SnapshotSource()
    if spec == "live" or spec.startswith("live:"):
        from wikiqa.sources.live import LiveSource

        return LiveSource(spec.partition(":")[2] or None)
    from wikiqa.sources import SnapshotSource

    if not Path(spec).exists():
        if "/" in spec or Path(spec).suffix in (".json", ".jsonl"):
            raise ValueError(f"{spec}: no such snapshot file")
        raise ValueError(
            f"unknown source {spec!r}: use snapshot, live, live:<host>, cassette:<run id> or a file path"
        )
    return SnapshotSource(spec)
