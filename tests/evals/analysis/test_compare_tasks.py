"""`wikiqa compare` names what it did not pair and who read drifted text: the tasks it left out
(not run, or every trial errored, with the error's cause) and, per task, the drifted articles
it read with its verdict in each run. Real runs on the offline snapshot; a changed article is a
replay of a cassette whose article was rewritten as a new revision."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wikiqa.cli.main import main
from wikiqa.evals import RunConfig, run_eval
from wikiqa.evals.running.passes import RunOutcome
from wikiqa.sources import Article
from wikiqa.sources.cassette_files import article_line, read_lines
from wikiqa.sources.protocol import normalize_title


def run(out: Path, source: str = "snapshot", **fields: Any) -> RunOutcome:
    config = RunConfig(**({"limit": 8, "trials": 1, "out": out, "source": source} | fields))
    return run_eval(config, progress=False)


def compare_json(a: str, b: str, out: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(["compare", a, b, "--out", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_names_the_tasks_it_left_out_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run(tmp_path, limit=4)
    b = run(tmp_path, f"cassette:{a.meta.run_id}", limit=6)  # 2 tasks the cassette lacks
    assert b.summary.errors == 2
    found = compare_json(a.meta.run_id, b.meta.run_id, tmp_path, capsys)
    assert found["rows"]["tasks"]["tasks"] == 4
    errored = pd.read_parquet(b.parquet).query("infra_error")["task_id"].unique()
    assert sorted(t["task_id"] for t in found["left_out"]) == sorted(errored)
    for left in found["left_out"]:
        assert left["reason"].startswith("not run in A; every trial errored in B (")
        assert "holds no search for" in left["reason"]
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "left out 2 tasks:" in text
    assert all(f"  {task}: not run in A; every trial errored in B" in text for task in errored)
    # Nothing left out: no such line.
    assert main(["compare", a.meta.run_id, a.meta.run_id, "--out", str(tmp_path)]) == 0
    assert "left out" not in capsys.readouterr().out


def rewrite_article(path: Path, title: str, text: str) -> Path:
    """A copy of the cassette with `title` as a new revision holding `text` (its line under the
    id of its new content, as a recorder would write it, and its fetches pointing there)."""
    records = [json.loads(line) for line in read_lines(path) if line]
    renamed: dict[str, str] = {}
    for record in records:
        if "article" in record and normalize_title(record["article"]["title"]) == title:
            record["article"] |= {"text": text, "revision_id": 2}
            line = article_line(Article.model_validate(record["article"]))
            renamed[record["id"]] = line["id"]
            record["id"] = line["id"]
        elif "fetch" in record and record["fetch"]["article"] in renamed:
            record["fetch"]["article"] = renamed[record["fetch"]["article"]]
    assert renamed, f"the cassette holds no {title!r}"
    changed = path.with_name("changed.cassette.jsonl.gz")
    changed.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    return changed


def test_compare_lists_each_task_that_read_a_drifted_article_with_both_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run(tmp_path)
    rows = pd.read_parquet(a.parquet)
    passing = rows.groupby("task_id")["passed"].all()
    cited = rows[rows["task_id"].isin(passing[passing].index)]["citations"].map(json.loads)
    title = next(c[0]["title"] for c in cited if c)
    changed = rewrite_article(tmp_path / str(a.meta.cassette), normalize_title(title),
                              "This revision says nothing on the matter.")  # fmt: skip
    b = run(tmp_path, f"cassette:{changed}")
    found = compare_json(a.meta.run_id, b.meta.run_id, tmp_path, capsys)
    assert found["drift"]["drifted_articles"] == 1
    readers = {
        task
        for outcome in (a, b)
        for task, read in _reads(outcome).items()
        if normalize_title(title) in read
    }
    listed = {t["task_id"]: t for t in found["drift_tasks"]}
    assert set(listed) == readers and readers
    assert all(t["articles"] == [found["drift"]["articles"][0]["title"]] for t in listed.values())
    verdicts = [_task_verdicts(o) for o in (a, b)]
    for task, t in listed.items():
        assert (t["a"], t["b"]) == (verdicts[0][task], verdicts[1][task])
        assert t["changed"] is (t["a"] != t["b"])
    assert any(t["changed"] for t in listed.values())  # the task that quoted it no longer passes
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    changes = sum(t["changed"] for t in listed.values())
    assert f"tasks that read drifted text: {len(listed)}, verdict changed in {changes}" in text
    first = found["drift_tasks"][0]  # a changed verdict first
    assert f"  {first['task_id']}: {first['a']} -> {first['b']} (changed); read " in text


def test_without_a_run_log_the_tasks_are_unknown_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run(tmp_path, limit=4)
    rows = pd.read_parquet(a.parquet)
    title = next(c[0]["title"] for c in rows["citations"].map(json.loads) if c)
    changed = rewrite_article(tmp_path / str(a.meta.cassette), normalize_title(title), "Other.")
    b = run(tmp_path, f"cassette:{changed}", limit=4)
    (tmp_path / "runs" / f"{b.meta.run_id}.log.jsonl").unlink()
    found = compare_json(a.meta.run_id, b.meta.run_id, tmp_path, capsys)
    assert found["drift_tasks"] == [] and "no log of run" in found["drift_tasks_unknown"]


def _reads(outcome: RunOutcome) -> dict[str, set[str]]:
    """task -> normalized titles of the articles its trials fetched (from the run's log)."""
    found: dict[str, set[str]] = {}
    log = outcome.meta.config.out / "runs" / f"{outcome.meta.run_id}.log.jsonl"
    for line in log.read_text().splitlines():
        body = json.loads(line)
        if body.get("kind") == "trial":
            record = body["record"]
            fetched = {normalize_title(r["title"]) for r in record["result"]["retrieved"]}
            found.setdefault(record["task_id"], set()).update(fetched)
    return found


def _task_verdicts(outcome: RunOutcome) -> dict[str, str]:
    from wikiqa.evals.analysis import task_verdicts

    table = task_verdicts(pd.read_parquet(outcome.parquet))
    return dict(zip(table["task_id"], table["task"], strict=True))
