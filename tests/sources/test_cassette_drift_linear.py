"""The diff of two cassettes is linear in their text: a crafted pair of articles with thousands
of near-identical sentences (what an alignment such as difflib's takes minutes over) is diffed,
by `wikiqa cassette diff` and by `wikiqa compare`, in a subprocess well inside its time limit,
and the changed sentences are all listed."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from wikiqa.evals import RunConfig, run_eval
from wikiqa.sources import Article, Provenance
from wikiqa.sources.cassette_drift import changed_sentences
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    Fetch,
    Header,
    article_line,
    header_line,
    read_lines,
)
from wikiqa.text import sentences

SENTENCES = 3000
LIMIT = 120  # seconds: generous on a loaded machine; the old alignment took minutes of CPU
CLI = [sys.executable, "-m", "wikiqa.cli"]


def crafted(mark: str) -> str:
    """3,000 sentences that differ from the other side's only in their last word."""
    return " ".join(f"Entry {i} holds {mark}." for i in range(SENTENCES))


def crafted_lines(mark: str, revision: int) -> list[dict[str, Any]]:
    article = Article(
        title="Crafted", text=crafted(mark), url="https://en.wikipedia.org/wiki/Crafted",
        revision_id=revision, provenance=Provenance(source="live", host="en.wikipedia.org"),
    )  # fmt: skip
    line = article_line(article)
    fetch = Fetch(title="Crafted", article=line["id"])
    return [line, {"fetch": fetch.model_dump(mode="json")}]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=LIMIT,
                          check=False, env=env)  # fmt: skip


def test_the_crafted_texts_split_into_their_sentences() -> None:
    assert len(sentences(crafted("a"))) == SENTENCES
    removed, added = changed_sentences(crafted("a"), crafted("b"))
    assert len(removed) == len(added) == SENTENCES
    assert (removed[7], added[7]) == ("Entry 7 holds a.", "Entry 7 holds b.")


def test_sets_not_alignment_moved_and_repeated_sentences_are_not_changes() -> None:
    old = "One. Two. Three. Two."
    assert changed_sentences(old, "Three. One. Two.") == ([], [])
    assert changed_sentences(old, "One. Two! Four.") == (["Two.", "Three."], ["Two!", "Four."])


def test_a_run_of_initials_splits_in_linear_time() -> None:
    """`A. B. C. ...` is one sentence (initials); checking each full stop for an abbreviation
    looks only at the text just before it, not at the whole sentence so far."""
    text = "Named " + " ".join(f"{chr(65 + i % 26)}." for i in range(30_000)) + " Smith. Done here."
    parts = sentences(text)
    assert len(parts) == 2 and parts[1] == "Done here."


def test_cassette_diff_of_a_crafted_pair_lists_every_changed_sentence(tmp_path: Path) -> None:
    pair = []
    for run, mark, revision in (("run-a", "a", 1), ("run-b", "b", 2)):
        head = Header(format=CASSETTE_FORMAT, created_at="2026-12-01", run_id=run)
        pair.append(write(tmp_path / f"{run}.cassette.jsonl.gz",
                          [header_line(head), *crafted_lines(mark, revision)]))  # fmt: skip
    assert all(p.stat().st_size < 20_000 for p in pair)  # a small file: the work is the diff's
    done = cli("cassette", "diff", str(pair[0]), str(pair[1]), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    (article,) = json.loads(done.stdout)["articles"]
    assert (article["a_revisions"], article["b_revisions"]) == ([1], [2])
    assert len(article["removed"]) == len(article["added"]) == SENTENCES
    assert article["added"][-1] == f"Entry {SENTENCES - 1} holds b."


def test_compare_of_two_runs_that_read_the_crafted_pair(tmp_path: Path) -> None:
    """Two real runs, each cassette given the crafted article at its own revision: `compare`
    prints the drift (the crafted article among the shared ones) in time."""
    out = tmp_path / "results"
    runs = [
        run_eval(RunConfig(limit=2, trials=1, out=out, experiment=name), progress=False)
        for name in ("a", "b")
    ]
    for outcome, mark, revision in zip(runs, "ab", (1, 2), strict=True):
        path = out / str(outcome.meta.cassette)
        records = [json.loads(line) for line in read_lines(path) if line]
        write(path, [*records, *crafted_lines(mark, revision)])
    env = os.environ | {"WIKIQA_RESULTS": str(out)}
    done = cli("compare", runs[0].meta.run_id, runs[1].meta.run_id, "--out", str(out),
               "--json", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    drift = json.loads(done.stdout)["drift"]
    assert drift["drifted_articles"] == 1
    (article,) = drift["articles"]
    assert article["title"] == "Crafted" and len(article["added"]) == SENTENCES
