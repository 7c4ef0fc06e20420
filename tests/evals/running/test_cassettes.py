"""Every run records a cassette, and `cassette:RUN_ID` replays it: end to end on the offline
snapshot (the dev suite's first tasks), through the registry, the runner, the CLI and a step."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.runlogs import cut_after
from wikiqa.cli.main import main
from wikiqa.evals import RunConfig, evaluate, run_eval
from wikiqa.evals.running.passes import RunOutcome
from wikiqa.experiment import climb, step
from wikiqa.registry import open_source
from wikiqa.sources import Article
from wikiqa.sources.cassette import CassetteSource
from wikiqa.sources.cassette_files import CassetteError, article_line, read_cassette, read_lines

# What differs between a run and its replay by design: who ran, when, how fast, from where.
NOT_VERDICTS = ["run_id", "created_at", "latency_ms", "source", "source_hash", "git_sha"]


@pytest.fixture(autouse=True)
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "results"
    monkeypatch.setenv("WIKIQA_RESULTS", str(out))
    return out


def run(results: Path, source: str = "snapshot", **fields: Any) -> RunOutcome:
    config = RunConfig(**({"limit": 12, "trials": 2, "out": results, "infra_backoff": 0.0,
                           "source": source} | fields))  # fmt: skip
    return run_eval(config, progress=False)


def cassette_path(outcome: RunOutcome) -> Path:
    return outcome.meta.config.out / str(outcome.meta.cassette)


def test_a_replayed_run_gives_the_same_verdicts_trial_for_trial(results: Path) -> None:
    first = run(results)
    path = cassette_path(first)
    assert path == results / "runs" / f"{first.meta.run_id}.cassette.jsonl.gz"
    cassette = read_cassette(path)
    assert cassette.header.suite_hashes == [first.meta.suite_hash]
    assert len(cassette.searches) >= 12 and len(cassette.articles) >= 12
    replay = run(results, f"cassette:{first.meta.run_id}")
    a, b = pd.read_parquet(first.parquet), pd.read_parquet(replay.parquet)
    assert b["source"].iloc[0] == f"cassette:{first.meta.run_id}"
    assert b["source_hash"].iloc[0] == cassette.sha256 == a["cassette_hash"].iloc[0]
    pd.testing.assert_frame_equal(a.drop(columns=NOT_VERDICTS), b.drop(columns=NOT_VERDICTS))
    # The replay recorded what it was answered: the very same calls, so the same hash.
    assert replay.meta.cassette_hash == first.meta.cassette_hash
    assert read_cassette(cassette_path(replay)).sha256 == cassette.sha256


def test_a_call_the_cassette_lacks_is_an_infrastructure_error_never_a_grade(
    results: Path,
) -> None:
    first = run(results, limit=4, trials=1)
    replay = run(results, f"cassette:{first.meta.run_id}", limit=6, trials=1)
    trials = pd.read_parquet(replay.parquet).drop_duplicates(["task_id", "trial"])
    missing = trials[trials["infra_error"]]
    assert len(missing) == 2 and len(trials) == 6
    assert set(missing["reason_code"]) == {"source_unavailable"}
    assert missing["refusal_reason"].str.contains("holds no search for").all()
    assert (missing["attempts"] == 1).all()  # a cassette's miss is final: not retried
    assert replay.summary.errors == 2 and "holds no search for" in str(replay.first_error)


def test_a_cassette_of_another_suite_is_refused_before_anything_is_written(
    results: Path, tmp_path: Path
) -> None:
    first = run(results, limit=3, trials=1)
    other = tmp_path / "other.jsonl"
    dev = [json.loads(line) for line in Path(first.meta.suite_path).read_text().splitlines()]
    drawn = set(first.frame["task_id"])  # the three tasks --limit 3 drew
    picked = [t for t in dev if t["id"] in drawn][::-1]
    other.write_text("".join(json.dumps(t) + "\n" for t in picked))
    before = sorted(p.name for p in results.rglob("*"))
    with pytest.raises(CassetteError, match=r"\.cassette\.jsonl\.gz:1: cassette of suite"):
        run(results, f"cassette:{first.meta.run_id}", suite=str(other), limit=3, trials=1)
    assert sorted(p.name for p in results.rglob("*")) == before
    anyway = run(results, f"cassette:{first.meta.run_id}?suite=any", suite=str(other), trials=1)
    assert anyway.summary.errors == 0  # the same three questions, in another order


def test_bad_cassettes_are_named_by_file_and_line_and_overwrite_nothing(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(results, limit=3, trials=1)
    lines = read_lines(cassette_path(first))[:-1]
    saved = first.parquet.read_bytes()
    cases = {
        "cut.cassette.jsonl.gz": ("\n".join(lines)[:-30], f":{len(lines)}: truncated line"),
        "junk.cassette.jsonl": ("\n".join([*lines[:2], "{oops", *lines[2:]]) + "\n",
                                ":3: invalid JSON"),
    }  # fmt: skip
    for name, (text, message) in cases.items():
        bad = tmp_path / name
        bad.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
        code = main(["eval", "--source", f"cassette:{bad}", "--limit", "3", "--trials", "1",
                     "--out", str(results)])  # fmt: skip
        assert code == 1
        assert f"{bad}{message}" in capsys.readouterr().err
    assert main(["eval", "--source", "cassette:no-such-run", "--out", str(results)]) == 1
    assert "no cassette for run 'no-such-run'" in capsys.readouterr().err
    assert first.parquet.read_bytes() == saved
    assert sorted(p.name for p in (results / "runs").iterdir()) == sorted(
        [first.parquet.name, cassette_path(first).name, f"{first.meta.run_id}.log.jsonl"]
    )


def test_an_interrupted_run_keeps_its_cassette_and_its_resume_appends(results: Path) -> None:
    whole = run(results, limit=6, trials=1)
    path = cassette_path(whole)
    lines = read_lines(path)[:-1]
    # A kill mid-write loses at most the line being written: every complete line is kept, the
    # last one is cut in half. (Cutting complete lines of a trial the log holds would lose
    # what no resume re-fetches: a kill cannot do that, lines are flushed before the log.)
    kept = lines[:-1]
    path.write_bytes(gzip.compress(("\n".join(kept) + "\n" + lines[-1][:20]).encode()))
    cut_after(results, whole.meta.run_id, 1)
    config = whole.meta.config
    resumed = run_eval(config, resume=whole.meta.run_id, progress=False)
    assert resumed.trials_run == 5
    again = read_cassette(path)
    assert again.sha256 == whole.meta.cassette_hash == resumed.meta.cassette_hash
    assert read_lines(path)[: len(kept)] == kept  # what it had is kept, appended after


def test_compare_prints_drift_beside_the_delta_and_marks_confounding(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = run(results, trials=1), run(results, trials=1)
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(results)]) == 0
    out = capsys.readouterr().out
    shared = len(read_cassette(cassette_path(a)).articles)
    assert f"drift: 0 of {shared} (0.0%) shared articles at different revisions" in out
    # B saw three of those articles at another revision (its cassette rewritten to say so, each
    # rewritten article under the id of its new content, as a recorder would have written it).
    path = cassette_path(b)
    records = [json.loads(line) for line in read_lines(path)[:-1]]
    renamed: dict[str, str] = {}
    for record in records:
        if "article" in record and len(renamed) < 3:
            record["article"]["revision_id"] = 1001 + len(renamed)
            line = article_line(Article.model_validate(record["article"]))
            renamed[record["id"]] = line["id"]
            record["id"] = line["id"]
        elif "fetch" in record and record["fetch"]["article"] in renamed:
            record["fetch"]["article"] = renamed[record["fetch"]["article"]]
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(results), "--json"]) == 0
    drift = json.loads(capsys.readouterr().out)["drift"]
    assert (drift["drifted_articles"], drift["shared_articles"]) == (3, shared)
    assert drift["confounded"] is (3 / shared > 0.05)
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(results)]) == 0
    assert ("CONFOUNDED" in capsys.readouterr().out) is drift["confounded"]
    path.unlink()
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(results)]) == 0
    assert f"drift: unknown (run {b.meta.run_id} has no cassette" in capsys.readouterr().out


def test_the_climb_shows_drift_beside_each_rows_delta(results: Path) -> None:
    for change in ("first", "second"):
        config = RunConfig(limit=5, trials=1, out=results, change=change, experiment=change)
        against = None if change == "first" else "first"
        outcome, row = evaluate(config, "record", against=against, progress=False)
        assert row is not None and row.cassette_hash == outcome.meta.cassette_hash
    table = climb(results)
    shared = len(read_cassette(cassette_path(outcome)).articles)
    assert table["drift"].isna().iloc[0]  # the first row of a suite is compared with nothing
    assert table["drift"].iloc[1] == f"0/{shared} revs, 0/5 hits"


def test_a_step_replays_a_cassette_given_as_its_source_parameter(results: Path) -> None:
    first = run(results / "scratch", limit=3, trials=1)  # an exploratory run, in scratch/
    found = open_source(f"cassette:{first.meta.run_id}")  # looked up under results/scratch/
    assert isinstance(found, CassetteSource)
    outcome = step({"SOURCE": f"cassette:{first.meta.run_id}", "LIMIT": 3, "TRIALS": 1})
    assert outcome.meta.source_name == f"cassette:{first.meta.run_id}"
    assert outcome.summary.errors == 0 and outcome.meta.cassette_hash == first.meta.cassette_hash
