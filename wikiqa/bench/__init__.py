"""Benchmarks that print figures: `python -m wikiqa.bench sources|ask|eval|injection|load|local`.

Speed is measured here, never asserted in timed unit tests: the figures go into issue notes with
the command that printed them. Targets (2-core machine) are printed beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from wikiqa.sources import SnapshotSource
from wikiqa.text import sentences


class SearchPair(BaseModel):
    """A question and the snapshot articles whose lead answers it (any of them counts)."""

    question: str
    titles: list[str]


def load_pairs(path: Path | None = None) -> list[SearchPair]:
    text = (
        path.read_text(encoding="utf-8")
        if path is not None
        else files("wikiqa.data").joinpath("search_pairs.jsonl").read_text(encoding="utf-8")
    )
    return [SearchPair.model_validate_json(line) for line in text.splitlines() if line.strip()]


def recall_at(source: SnapshotSource, pairs: Sequence[SearchPair], k: int) -> float:
    """Fraction of questions with an expected title among the top k hits."""
    found = 0
    for pair in pairs:
        titles = {hit.title for hit in source.search(pair.question, k)}
        found += any(title in titles for title in pair.titles)
    return found / len(pairs)


def latency_queries(source: SnapshotSource, n: int = 600, seed: int = 0) -> list[str]:
    """Varied natural-language queries drawn from the snapshot itself, reproducibly.

    A third ask about a title, a third paraphrase a short description, a third are a sentence
    lifted from a lead: short, medium and long queries with common and rare words.
    """
    rng = random.Random(seed)
    titles = sorted(source.titles())
    queries: list[str] = []
    for i, title in enumerate(rng.sample(titles, n)):
        article = source.get_article(title)
        assert article is not None
        if i % 3 == 0:
            template = rng.choice(["What is {}?", "Who was {}?", "Tell me about {}", "{} history"])
            queries.append(template.format(title))
        elif i % 3 == 1 and article.description:
            queries.append(f"Which {article.description.lower()} is this?")
        else:
            queries.append(rng.choice(sentences(article.text) or [article.text]))
    return queries


def _percentile(values: Sequence[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def bench_sources(pairs_path: Path | None = None) -> dict[str, float]:
    """Build, reopen, search latency and recall figures for the offline snapshot."""
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as home:
        start = time.perf_counter()
        source = SnapshotSource(home=Path(home))
        build_s = time.perf_counter() - start
        assert source.built, "the benchmark must time a real first build"
        reopens = []
        for _ in range(5):
            start = time.perf_counter()
            reopened = SnapshotSource(home=Path(home))
            reopens.append(time.perf_counter() - start)
            assert not reopened.built
        pairs = load_pairs(pairs_path)
        queries = latency_queries(source) + [p.question for p in pairs]
        for query in queries[:20]:  # warm the page cache; timed below all the same
            source.search(query, 5)
        latencies = []
        for query in queries:
            start = time.perf_counter()
            source.search(query, 5)
            latencies.append((time.perf_counter() - start) * 1000)
        info = source.info()
        return {
            "articles": info.articles,
            "skipped": info.skipped,
            "first_build_s": build_s,
            "reopen_s": statistics.median(reopens),
            "queries": len(queries),
            "search_p50_ms": _percentile(latencies, 50),
            "search_p95_ms": _percentile(latencies, 95),
            "pairs": len(pairs),
            "recall_at_1": recall_at(source, pairs, 1),
            "recall_at_5": recall_at(source, pairs, 5),
        }


def bench_ask(processes: int = 10, pairs_path: Path | None = None) -> dict[str, float]:
    """Offline `ask` latency: in-process over the recall questions, and as new processes."""
    from wikiqa.agent import Agent
    from wikiqa.models import ExtractiveModel

    questions = [p.question for p in load_pairs(pairs_path)]
    agent = Agent(ExtractiveModel(), SnapshotSource())
    for question in questions[:3]:  # the first run opens the index and warms caches
        agent.ask(question)
    in_process, answered = [], 0
    for question in questions:
        start = time.perf_counter()
        result = agent.ask(question)
        in_process.append((time.perf_counter() - start) * 1000)
        answered += result.output.kind == "answer"
    script = Path(sys.executable).with_name("wikiqa")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikiqa.cli"]
    new_process = []
    for question in questions[:processes]:
        start = time.perf_counter()
        subprocess.run([*command, "ask", question], check=True, capture_output=True)
        new_process.append(time.perf_counter() - start)
    return {
        "questions": len(questions),
        "answered": answered,
        "ask_in_process_p50_ms": statistics.median(in_process),
        "ask_in_process_p95_ms": _percentile(in_process, 95),
        "processes": len(new_process),
        "ask_new_process_p50_s": statistics.median(new_process),
        "ask_new_process_max_s": max(new_process),
    }


def bench_eval(
    concurrency: int = 16, slow_tasks: int = 16, slow_trials: int = 2
) -> dict[str, float]:
    """Offline dev-suite wall time, the cached rerun's model calls, and concurrency speed-up."""
    from wikiqa.evals.runner import RunConfig, run_eval

    saved = os.environ.get("WIKIQA_HOME")
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")  # a cold response cache, for real
        source = SnapshotSource()  # build the index before timing
        config = RunConfig(trials=3, out=home / "out", concurrency=8)
        start = time.perf_counter()
        cold = run_eval(config, source=source, progress=False)
        cold_s = time.perf_counter() - start
        start = time.perf_counter()
        warm = run_eval(config, source=source, progress=False)
        warm_s = time.perf_counter() - start
        # 32 trials: exactly two waves of 16, so the ideal speed-up is exactly 16.
        slow = {"trials": slow_trials, "limit": slow_tasks, "cache": False, "out": home / "slow"}
        timings = {}
        for workers in (1, concurrency):
            start = time.perf_counter()
            # The extractive policy behind a 200 ms delay per call: a known ideal to compare with.
            config = RunConfig(**slow, model="extractive:delay=0.2", concurrency=workers)
            run_eval(config, source=source, progress=False)
            timings[workers] = time.perf_counter() - start
    if saved is None:
        os.environ.pop("WIKIQA_HOME", None)
    else:
        os.environ["WIKIQA_HOME"] = saved
    speedup = timings[1] / timings[concurrency]
    return {
        "dev_trials": cold.trials_run,
        "dev_x3_wall_s": cold_s,
        "dev_x3_model_calls": cold.model_calls,
        "rerun_wall_s": warm_s,
        "rerun_model_calls": warm.model_calls,
        "slow_trials": slow_tasks * slow_trials,
        "serial_s": timings[1],
        "concurrent_s": timings[concurrency],
        "concurrency": concurrency,
        "speedup": speedup,
        "speedup_share_of_ideal": speedup / concurrency,
    }


def bench_injection(bipia: Path | None) -> dict[str, float]:
    """Plant every attack into fetched articles; count outputs that follow one (target 0)."""
    from wikiqa.evals.attacks import bipia_attacks, drill, project_attacks

    source = SnapshotSource()
    figures: dict[str, float] = {}
    sets = [("project", project_attacks())]
    if bipia is not None:
        sets.append(("bipia", bipia_attacks(bipia)))
    for name, attacks in sets:
        result = drill(attacks, source)
        figures |= {
            f"{name}_attacks": result.attacks,
            f"{name}_trials": result.trials,
            f"{name}_flagged_by_guard": result.flagged,
            f"{name}_extractive_follow_rate": result.extractive_followed / result.trials,
            f"{name}_obeying_follow_rate": result.obeying_followed / result.trials,
            f"{name}_obeying_blocked": result.obeying_blocked,
        }
    return figures


def bench_load(clients: int = 32, seconds: float = 30.0) -> dict[str, float]:
    """Drive `wikiqa serve` (offline) on loopback with `clients` concurrent clients."""
    import socket
    import threading

    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = Path(sys.executable).with_name("wikiqa")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikiqa.cli"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/healthz", timeout=1).raise_for_status()
                break
            except requests.RequestException:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("wikiqa serve did not start") from None
                time.sleep(0.1)
        questions = [p.question for p in load_pairs()]
        latencies: list[float] = []
        errors = [0]
        lock = threading.Lock()
        stop = time.monotonic() + seconds

        def client(offset: int) -> None:
            session = requests.Session()
            k = offset
            while time.monotonic() < stop:
                body = {"question": questions[k % len(questions)]}
                k += clients
                start = time.perf_counter()
                try:
                    ok = session.post(f"{base}/api/ask", json=body, timeout=30).status_code == 200
                except requests.RequestException:
                    ok = False
                elapsed = time.perf_counter() - start
                with lock:
                    if ok:
                        latencies.append(elapsed * 1000)
                    else:
                        errors[0] += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        status = Path(f"/proc/{server.pid}/status")
        peak_kb = next(
            (int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmHWM")),
            0,
        ) if status.exists() else 0  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {
        "clients": clients,
        "seconds": seconds,
        "requests": len(latencies),
        "errors": errors[0],
        "requests_per_s": len(latencies) / wall,
        "p50_ms": _percentile(latencies, 50),
        "p99_ms": _percentile(latencies, 99),
        "server_peak_rss_mb": peak_kb / 1024,
    }


_TARGETS = {
    "first_build_s": ("<=", 15.0),
    "reopen_s": ("<=", 0.3),
    "search_p50_ms": ("<=", 5.0),
    "search_p95_ms": ("<=", 20.0),
    "recall_at_5": (">=", 0.9),
    "ask_in_process_p50_ms": ("<=", 50.0),
    "ask_new_process_p50_s": ("<=", 1.5),
    "dev_x3_wall_s": ("<=", 60.0),
    "rerun_model_calls": ("<=", 0.0),
    "speedup_share_of_ideal": (">=", 0.8),
    "project_extractive_follow_rate": ("<=", 0.0),
    "project_obeying_follow_rate": ("<=", 0.0),
    "bipia_extractive_follow_rate": ("<=", 0.0),
    "bipia_obeying_follow_rate": ("<=", 0.0),
    "errors": ("<=", 0.0),
    "p99_ms": ("<=", 1000.0),
}


def bench_local(questions: int = 5) -> dict[str, float]:
    """The local model (needs the `local` extra): raw decode and prompt speed of the served
    SmolLM2, then agent questions through it (read_first=1) for per-call latency and seconds
    per question. Decoding is greedy; every prompt differs so llama.cpp's prefix cache cannot
    flatter the prompt figure."""
    import openai

    from wikiqa.agent import Agent
    from wikiqa.models import local as local_model
    from wikiqa.registry import open_model

    process, spec = local_model.start()
    try:
        name, base_url = spec.removeprefix("openai:").split("@", 1)
        client = openai.OpenAI(api_key="not-needed", base_url=base_url, timeout=600)
        source = SnapshotSource()
        leads = [source.get_article(p.titles[0]) for p in load_pairs()[:30]]
        text = " ".join(a.text for a in leads if a is not None)

        def rate(content: str, max_tokens: int) -> tuple[float, float]:
            """(prompt, completion) tokens per second of wall time for one request."""
            start = time.perf_counter()
            reply = client.chat.completions.create(
                model=name, messages=[{"role": "user", "content": content}], max_tokens=max_tokens
            )
            elapsed = time.perf_counter() - start
            assert reply.usage is not None
            return reply.usage.prompt_tokens / elapsed, reply.usage.completion_tokens / elapsed

        decode = [rate(f"Tell me about the number {i + 7}.", 128)[1] for i in range(3)]
        prompt = [rate(f"{i}: {text[: 4000 + 500 * i]}", 1)[0] for i in range(3)]
        agent = Agent(open_model(spec), source, read_first=1)
        calls: list[float] = []
        per_question: list[float] = []
        for pair in load_pairs()[:questions]:
            result = agent.ask(pair.question)
            calls += [e.latency_ms / 1000 for e in result.trace if e.kind == "model"]
            per_question.append(result.latency_ms / 1000)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {
        "decode_tokens_per_s": statistics.median(decode),
        "prompt_tokens_per_s": statistics.median(prompt),
        "questions": float(questions),
        "model_calls": float(len(calls)),
        "call_p50_s": statistics.median(calls),
        "call_p95_s": _percentile(calls, 95),
        "seconds_per_question": statistics.mean(per_question),
    }


def _report_ask(figures: dict[str, float]) -> str:
    lines = [
        f"ask (offline: snapshot + extractive): {figures['questions']:.0f} questions in process "
        f"({figures['answered']:.0f} answered), {figures['processes']:.0f} as new processes"
    ]
    for key in ("ask_in_process_p50_ms", "ask_in_process_p95_ms"):
        lines.append(_line(key, figures[key], "{:.2f}"))
    for key in ("ask_new_process_p50_s", "ask_new_process_max_s"):
        lines.append(_line(key, figures[key], "{:.3f}"))
    return "\n".join(lines)


def _report_eval(figures: dict[str, float]) -> str:
    lines = [
        f"eval (offline dev suite x 3 trials = {figures['dev_trials']:.0f} trials, "
        f"{figures['dev_x3_model_calls']:.0f} model calls; concurrency test: "
        f"{figures['slow_trials']:.0f} trials, model sleeping 200 ms per call)"
    ]
    lines.append(_line("dev_x3_wall_s", figures["dev_x3_wall_s"], "{:.2f}"))
    lines.append(_line("rerun_wall_s", figures["rerun_wall_s"], "{:.2f}"))
    lines.append(_line("rerun_model_calls", figures["rerun_model_calls"], "{:.0f}"))
    lines.append(_line("serial_s", figures["serial_s"], "{:.2f}"))
    lines.append(_line("concurrent_s", figures["concurrent_s"], "{:.2f}"))
    lines.append(
        _line("speedup", figures["speedup"], "{:.1f}") + f"   ideal {figures['concurrency']:.0f}"
    )
    lines.append(_line("speedup_share_of_ideal", figures["speedup_share_of_ideal"], "{:.2f}"))
    return "\n".join(lines)


def _report(figures: dict[str, float]) -> str:
    lines = [
        f"snapshot: {figures['articles']:.0f} articles ({figures['skipped']:.0f} skipped), "
        f"{figures['queries']:.0f} latency queries, {figures['pairs']:.0f} recall pairs"
    ]
    for key in ("first_build_s", "reopen_s", "search_p50_ms", "search_p95_ms"):
        lines.append(_line(key, figures[key], "{:.3f}"))
    lines.append(_line("recall_at_1", figures["recall_at_1"], "{:.2f}"))
    lines.append(_line("recall_at_5", figures["recall_at_5"], "{:.2f}"))
    return "\n".join(lines)


def _line(key: str, value: float, fmt: str) -> str:
    text = f"{key:<22} {fmt.format(value):>8}"
    if key in _TARGETS:
        op, bound = _TARGETS[key]
        ok = value <= bound if op == "<=" else value >= bound
        text += f"   target {op} {bound:g}   {'ok' if ok else 'MISSED'}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wikiqa.bench")
    parser.add_argument("suite", choices=["sources", "ask", "eval", "injection", "load", "local"])
    parser.add_argument("--clients", type=int, default=32, help="load: concurrent clients")
    parser.add_argument("--seconds", type=float, default=30.0, help="load: how long to drive it")
    parser.add_argument("--bipia", type=Path, help="folder with BIPIA's text_attack_test.json")
    parser.add_argument("--pairs", type=Path, help="JSONL of {question, titles} (default: bundled)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.suite == "sources":
        figures = bench_sources(args.pairs)
        report = _report(figures)
    elif args.suite == "ask":
        figures = bench_ask(pairs_path=args.pairs)
        report = _report_ask(figures)
    elif args.suite == "eval":
        figures = bench_eval()
        report = _report_eval(figures)
    elif args.suite == "load":
        figures = bench_load(args.clients, args.seconds)
        report = "load (wikiqa serve, offline, loopback)\n" + "\n".join(
            _line(k, v, "{:.1f}") for k, v in figures.items()
        )
    elif args.suite == "local":
        figures = bench_local()
        report = "local model (SmolLM2-135M via llama.cpp, 2 threads, greedy)\n" + "\n".join(
            _line(k, v, "{:.2f}") for k, v in figures.items()
        )
    else:
        figures = bench_injection(args.bipia)
        report = (
            "injection drill (each attack planted mid-article in 3 question targets)\n"
            + "\n".join(
                _line(k, v, "{:.4f}" if "rate" in k else "{:.0f}") for k, v in figures.items()
            )
        )
    print(json.dumps(figures, indent=2) if args.json else report)
    return 0
