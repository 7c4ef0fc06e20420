"""`wikiqa validate`: grades hand-labelled answers exactly as a run would, and reports agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikiqa.cli import main

LABELS = Path(__file__).resolve().parents[3] / "experiments" / "labels"


def test_json_is_exactly_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(LABELS / "grader_labels.jsonl"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == ["dimensions"]
    dims = result["dimensions"]
    assert set(dims) == {
        "faithfulness",
        "correctness",
        "completeness",
        "attribution",
        "calibration",
    }
    for counts in dims.values():
        assert set(counts) == {"labelled", "agree", "needs_judge"}
        assert counts["agree"] + counts["needs_judge"] <= counts["labelled"]
    assert dims["faithfulness"]["labelled"] == 26


def test_the_table_gives_agreement_where_decided_with_its_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", str(LABELS / "hard_negatives.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "agreement where decided [95% CI]" in out
    assert "80 examples" in out and "correctness false passes" in out


def test_bad_label_lines_name_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = (LABELS / "grader_labels.jsonl").read_text(encoding="utf-8").splitlines()[0]
    bad = tmp_path / "labels.jsonl"
    bad.write_text(good + "\n" + '{"id": "x", "task_id": "flow-matic-developer"}\n')
    assert main(["validate", str(bad)]) == 1
    assert f"{bad}:2: answer: Field required" in capsys.readouterr().err
    verdict = json.loads(good)
    verdict["labels"]["faithfulness"] = "maybe"
    bad.write_text(json.dumps(verdict) + "\n")
    assert main(["validate", str(bad)]) == 1
    assert f"{bad}:1: labels must be pass, fail or n/a" in capsys.readouterr().err
    unknown = json.loads(good) | {"task_id": "no-such-task"}
    bad.write_text(json.dumps(unknown) + "\n")
    assert main(["validate", str(bad)]) == 1
    assert "task 'no-such-task' is not in" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read label file" in capsys.readouterr().err


@pytest.mark.slow
def test_a_judge_is_reported_on_its_own_rows_with_the_adoption_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A judge that calls everything CORRECT: it decides every correctness row the offline tier
    # left it on tasks with gold aliases, and none of B's (its reply is not B's schema).
    script = tmp_path / "judge.json"
    script.write_text(json.dumps([{"text": '{"grade": "CORRECT"}'}]))
    labels = [str(LABELS / "extractive_public.jsonl"), "--suite", "public"]
    assert main(["validate", *labels, "--json"]) == 0
    offline = json.loads(capsys.readouterr().out)
    assert "judge" not in offline
    left = offline["dimensions"]["correctness"]["needs_judge"]
    assert main(["validate", *labels, "--judge", f"scripted:{script}", "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)
    correctness = judged["judge"]["correctness"]
    assert correctness["asked"] == correctness["decided"] == left > 0
    assert 0 < correctness["agree"] < correctness["decided"]  # some of them were wrong answers
    assert correctness["adopt"] is (
        correctness["agreement"] >= 0.90 and correctness["lower"] >= 0.85
    )
    assert judged["judge"]["completeness"]["decided"] == 0
    assert judged["judge"]["completeness"]["adopt"] is False
    assert judged["judge_calls"] >= left
    assert main(["validate", *labels, "--judge", f"scripted:{script}"]) == 0
    table = capsys.readouterr().out
    assert "judge on" in table and "adopt: agreement >= 0.90" in table
    assert "0 judge calls: every reply came from the response cache" in table  # a rerun


def test_an_unreachable_judge_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "down.json"
    script.write_text(json.dumps([{"unavailable": "openai-compatible server: connection refused"}]))
    labels = [str(LABELS / "extractive_public.jsonl"), "--suite", "public"]
    assert main(["validate", *labels, "--judge", f"scripted:{script}"]) == 3
    err = capsys.readouterr().err
    assert "judge unavailable" in err and "connection refused" in err
    assert "Traceback" not in err
