"""Files and specs a user can point the CLI at: unbounded, malformed, held-out in disguise.

Each case was a crash or a loophole (issue 16, items 12-14): MemoryError on /dev/zero, raw
TypeErrors from malformed scripts, an uncaught ModelUnavailable from an unreachable judge, and a
held-out suite run as a development suite through /dev/stdin or a copy.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from wikiqa.cli import main
from wikiqa.evals import RunConfig, run_eval
from wikiqa.project import suites_dir

ROOT = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_unbounded_files_are_refused_with_their_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = str(tmp_path)
    code, err = run(capsys, "eval", "--suite", "/dev/zero", "--out", out)
    assert code == 1 and "/dev/zero: task file is a character device, not a regular file" in err
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: 9 MiB on paper, nothing on disk
        fh.truncate(9 * 1024 * 1024)
    code, err = run(capsys, "ask", "Who?", "--model", f"scripted:{big}")
    assert code == 1 and f"{big}: script is larger than 8 MiB" in err
    assert "Traceback" not in err


LABELS = str(ROOT / "experiments" / "labels" / "grader_labels.jsonl")


def _fifo_and_zero(tmp_path: Path) -> tuple[Path, Path]:
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    bipia = tmp_path / "bipia"
    bipia.mkdir()
    (bipia / "text_attack_test.json").symlink_to("/dev/zero")
    return fifo, bipia


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["wikiqa", "eval", "--suite", "{fifo}", "--out", "{tmp}"], "task file"),
        (["wikiqa", "ask", "Who?", "--model", "scripted:{fifo}"], "script"),
        (["wikiqa", "snapshot", "record", "--titles", "{fifo}", "--out", "{tmp}/s.jsonl"],
         "title list"),
        (["bench", "ask", "--pairs", "{fifo}"], "pairs file"),
        (["bench", "sources", "--pairs", "/dev/zero"], "pairs file"),
        (["wikiqa", "confidence", "check", LABELS, "--weights", "/dev/zero"], "weights file"),
        (["bench", "injection", "--bipia", "{bipia}"], "BIPIA file"),
    ],
)  # fmt: skip
def test_fifos_and_devices_are_refused_at_once_by_name(
    argv: list[str], what: str, tmp_path: Path
) -> None:
    """Issue 23, items 7 and 8: a FIFO hung forever, /dev/zero died with MemoryError."""
    fifo, bipia = _fifo_and_zero(tmp_path)
    filled = [a.format(fifo=fifo, tmp=tmp_path, bipia=bipia) for a in argv]
    module = "wikiqa.cli" if filled[0] == "wikiqa" else "wikiqa.bench"
    proc = subprocess.run(
        [sys.executable, "-m", module, *filled[1:]],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert f"{what} is a " in proc.stderr and "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ('[{"text": "a"},\n {"txt": 1}]', "turn 2: expected a list of tool calls"),
        ('[[{"arguments": {}}]]', "turn 1: expected a list of tool calls"),
        ('[[{"name": "search", "arguments": "x"}]]', "turn 1: expected"),
        ("[1, 2]", "turn 1: expected"),
        ('{"text": "a"}', "a script is a JSON list of turns"),
        ('[\n{"text": "a"}\n{"text": "b"}]', ":3: invalid JSON"),
        (b"\xff\xfe", "script is not UTF-8"),
    ],
)
def test_malformed_scripts_fail_at_load_with_file_and_place(
    script: str | bytes, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    if isinstance(script, bytes):
        path.write_bytes(script)
    else:
        path.write_text(script)
    code, err = run(capsys, "ask", "Who discovered penicillin?", "--model", f"scripted:{path}")
    assert code == 1 and str(path) in err and message in err
    assert "Traceback" not in err


def test_an_unreachable_judge_is_an_infrastructure_error_not_a_grade(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps([{"unavailable": "openai-compatible server: connection refused"}]))
    out = tmp_path / "out"
    # Of the three dev tasks --limit 3 draws, the multi-hop one's correctness is left to the
    # judge; the other two are decided offline.
    code, err = run(
        capsys, "eval", "--trials", "1", "--limit", "3", "--judge", f"scripted:{judge}",
        "--out", str(out), "--record",
    )  # fmt: skip
    assert code == 3  # unavailable, not a crash (1) and not a result (0)
    assert "judge unavailable: openai-compatible server: connection refused" in err
    # recorded, with its error counted on its row (only a run whose every trial failed is not)
    (row,) = [json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()]
    assert row["errors"] == 1 and "nothing recorded" not in err
    frame = pd.read_parquet(next((out / "runs").glob("*.parquet")))
    judged = frame[frame["task_id"] == "odyssey-cowriter-nationality"]
    assert judged["infra_error"].all()
    assert set(judged["verdict"]) == {"error"}  # no pass, no fail: the agent was not graded
    rest = frame[
        frame["task_id"] != "odyssey-cowriter-nationality"
    ]  # cheap first: the judge never asked
    assert not rest["infra_error"].any() and "error" not in set(rest["verdict"])


def test_a_judge_outage_is_graded_again_on_resume_without_rerunning_the_agent(
    tmp_path: Path,
) -> None:
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps([{"unavailable": "down"}]))
    config = RunConfig(trials=1, limit=3, judge=f"scripted:{judge}", out=tmp_path, infra_backoff=0)
    first = run_eval(config, progress=False)
    assert first.summary.errors == 1 and not first.all_failed  # the one trial the judge gets
    assert first.first_error is not None and "judge unavailable" in first.first_error
    judge.write_text(json.dumps([{"text": '{"grade": "CORRECT"}'}]))
    again = run_eval(config, resume=first.meta.run_id, progress=False)
    assert again.trials_run == 0 and again.summary.errors == 0 and again.judge_calls == 1


def test_a_copy_of_the_holdout_is_still_the_holdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    copy = tmp_path / "my_suite.jsonl"
    shutil.copy(suites_dir() / "holdout.jsonl", copy)
    code, err = run(capsys, "eval", "--suite", str(copy), "--out", str(tmp_path))
    assert code == 1 and "ask held-out questions" in err
    # a subset with new ids is caught too: a task is known by its content, not its name
    lines = (suites_dir() / "public_holdout.jsonl").read_text().splitlines()[:3]
    renamed = [json.dumps({**json.loads(line), "id": f"mine-{i}"}) for i, line in enumerate(lines)]
    copy.write_text("\n".join(renamed) + "\n")
    code, err = run(capsys, "eval", "--suite", str(copy), "--out", str(tmp_path))
    assert code == 1 and "3 task(s) ask held-out questions" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_the_holdout_through_stdin_is_refused(tmp_path: Path) -> None:
    held = (suites_dir() / "holdout.jsonl").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "eval", "--suite", "/dev/stdin", "--out", str(tmp_path)],
        input=held, capture_output=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert b"ask held-out questions" in proc.stderr and b"Traceback" not in proc.stderr
    # and a development suite through stdin runs, hashed from the bytes that were parsed
    dev = b"\n".join((suites_dir() / "dev.jsonl").read_bytes().splitlines()[:2]) + b"\n"
    proc = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "eval", "--suite", "/dev/stdin", "--trials", "1",
         "--out", str(tmp_path)],
        input=dev, capture_output=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    frame = pd.read_parquet(next((tmp_path / "runs").glob("*.parquet")))
    assert frame["task_id"].nunique() == 2
    assert frame["suite_hash"].iloc[0] == hashlib.sha256(dev).hexdigest()[:16]


# -- every reader bounded: gzip bombs, deep JSON, files that are not what they claim ------------


def _gzip_bomb(path: Path, megabytes: int = 200) -> Path:
    """A gzip file of about 200 kB that inflates to `megabytes` MiB of blank lines (one
    member of a megabyte, repeated: gzip readers read every member)."""
    path.write_bytes(gzip.compress(b"\n" * (1024 * 1024), 9) * megabytes)
    return path


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.slow
def test_gzip_bombs_are_refused_at_the_inflation_cap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bomb = str(_gzip_bomb(tmp_path / "bomb.cassette.jsonl.gz"))
    for argv in (
        ["cassette", "info", bomb],
        ["cassette", "diff", bomb, bomb],
        ["cassette", "merge", bomb, bomb, "--out", str(tmp_path / "merged.jsonl.gz")],
        ["search", "Everest", "--source", f"cassette:{bomb}"],
        ["replies", "import", bomb],
    ):
        code, err = run(capsys, *argv)
        what = "replies file" if argv[0] == "replies" else "cassette"
        assert code == 1, argv
        assert f"{bomb}: {what} inflates to more than 128 MiB" in _one_line(err), argv
    assert not (tmp_path / "merged.jsonl.gz").exists()


DEEP = b"[" * 100_000 + b"\n"


def test_a_line_nested_past_the_cap_is_one_line_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b"\n" + DEEP)
    replies = tmp_path / "deep.jsonl.gz"
    replies.write_bytes(gzip.compress(b"\n" + DEEP))
    for argv in (
        ["eval", "--suite", str(deep), "--out", str(tmp_path / "o")],
        ["validate", str(deep)],
        ["cassette", "info", str(deep)],
        ["article", "Mount Everest", "--source", f"cassette:{deep}"],
        ["replies", "import", str(replies)],
    ):
        code, err = run(capsys, *argv)
        where = replies if argv[0] == "replies" else deep
        assert code == 1 and f"{where}:2: JSON nested deeper than 64 levels" in _one_line(err)
    out = tmp_path / "climb"
    out.mkdir()
    (out / "changelog.jsonl").write_bytes(DEEP)
    code, err = run(capsys, "eval", "--trials", "1", "--limit", "1", "--record", "--out", str(out))
    assert code == 1
    assert f"{out / 'changelog.jsonl'}:1: JSON nested deeper" in _one_line(err)


def test_what_is_not_a_parquet_is_named_as_such(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = tmp_path / "notes.parquet"
    text.write_text("not a table\n")
    passwd = tmp_path / "passwd.parquet"
    passwd.symlink_to("/etc/passwd")
    for argv in (
        ["compare", str(text), str(passwd)],
        ["outcomes", str(passwd), "--labels", LABELS],
        ["confidence", "fit", str(text)],
        ["check", "--run", str(passwd)],
    ):
        code, err = run(capsys, *argv)
        bad = text if str(text) in argv else passwd
        assert code == 1 and f"{bad}: not a parquet run file" in _one_line(err), argv


def test_a_cassette_linked_to_a_device_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    code, err = run(capsys, "search", "x", "--source", f"cassette:{zero}")
    assert code == 1
    assert f"{zero}: cassette is a character device, not a regular file" in _one_line(err)
    assert "no such cassette" not in err


def test_a_resumed_run_whose_log_is_a_fifo_or_a_device_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _ = run(capsys, "eval", "--trials", "1", "--limit", "1", "--out", str(tmp_path))
    assert code == 0
    (log,) = (tmp_path / "runs").glob("*.log.jsonl")
    log.unlink()
    os.mkfifo(log)
    argv = ["eval", "--resume", log.name.removesuffix(".log.jsonl"), "--out", str(tmp_path)]
    code, err = run(capsys, *argv)
    assert code == 1 and f"{log}: " in _one_line(err) and "FIFO" in err
    log.unlink()
    log.symlink_to("/dev/zero")  # a log is appended to: a link is refused as such
    code, err = run(capsys, *argv)
    assert code == 1 and f"{log}: a symlink" in _one_line(err)
