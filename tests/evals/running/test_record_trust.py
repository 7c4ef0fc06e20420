"""A run's record is input from someone else: each attack on a copy of a committed run (or a
fresh one where the attack needs a run to finish) is refused, and nothing outside the results
folder changes.

The attacker can commit anything to a results folder, and can recompute the log's chain: the
chain catches an edit made without it, and what protects the victim is that a log never chooses
the model, judge or source (and so never where a key is sent), and never supplies a verdict.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.runlogs import rechained
from wikiqa.cli.main import main
from wikiqa.evals import RunConfig, RunLog, RunLogError, evaluate, log_path, run_eval
from wikiqa.evals.running.locks import Busy, folder_lock, run_lock
from wikiqa.evals.running.regrade import regrade
from wikiqa.project import project_root

COMMITTED = "20261201T103646Z-09-qwen-baseline-c84497"  # Qwen on dev, 41 tasks x 3 trials


def _tree(folder: Path) -> dict[str, str]:
    """Every file under `folder` (symlinks as their target), by content hash; the lock files
    a refused run may leave (empty, in `results/.locks/`) aside."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if ".locks" in path.parts:
            continue
        if path.is_symlink():
            found[str(path)] = "-> " + str(path.readlink())
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """(results folder holding a copy of a committed run, a file outside it that must not
    change): `tmp_path/project/results`, and `tmp_path/project/Makefile`."""
    results = tmp_path / "project" / "results"
    (results / "runs").mkdir(parents=True)
    source = project_root() / "results" / "runs"
    shutil.copy(source / f"{COMMITTED}.parquet", results / "runs" / f"{COMMITTED}.parquet")
    # the committed log is packed; these tests edit its lines, so they read it unpacked
    packed = (source / f"{COMMITTED}.log.jsonl.gz").read_bytes()
    (results / "runs" / f"{COMMITTED}.log.jsonl").write_bytes(gzip.decompress(packed))
    outside = tmp_path / "project" / "Makefile"
    outside.write_text("all:\n\techo fine\n")
    return results, outside


def rechain(path: Path, edit: Any) -> None:
    """Rewrite a log as an attacker who knows the format would (`tests.runlogs.rechained`)."""
    path.write_text(rechained(path.read_text(), edit))


class Listener(BaseHTTPRequestHandler):
    """An attacker's server: it counts what reaches it, and what the requests carried."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        Listener.seen.append(dict(self.headers))
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[str]:
    Listener.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_log_naming_another_host_sends_nothing_there(
    world: tuple[Path, Path],
    attacker: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results, outside = world
    monkeypatch.setenv("OPENAI_API_KEY", "sk-victim-0000000000000000")

    def forge(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        bodies[0]["meta"]["model"] = f"openai:gpt-4o@{attacker}"
        bodies[0]["meta"]["config"]["model"] = f"openai:gpt-4o@{attacker}"
        return bodies

    path = log_path(results, COMMITTED)
    rechain(path, forge)
    before = _tree(results.parent)
    code = main(["eval", "--resume", COMMITTED, "--out", str(results)])
    err = capsys.readouterr().err
    assert code == 1 and "was made with model='openai:gpt-4o@http://127.0.0.1" in err
    assert Listener.seen == []  # not one request, so no key went anywhere
    assert _tree(results.parent) == before and outside.read_text() == "all:\n\techo fine\n"


def test_a_log_that_is_a_symlink_is_never_read_or_appended_through(
    world: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, outside = world
    path = log_path(results, COMMITTED)
    path.unlink()
    path.symlink_to(outside)
    before = _tree(results.parent)
    assert main(["eval", "--resume", COMMITTED, "--out", str(results)]) == 1
    assert "a symlink" in capsys.readouterr().err
    assert main(["regrade", COMMITTED, "--out", str(results), "--change", "x"]) == 1
    assert "a symlink" in capsys.readouterr().err
    assert _tree(results.parent) == before and outside.read_text() == "all:\n\techo fine\n"


@pytest.mark.parametrize("run_id", ["../../Makefile", "/etc/passwd", "..", ".hidden", "a/b"])
def test_a_run_id_never_names_a_path(
    world: tuple[Path, Path], run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    results, _ = world
    before = _tree(results.parent)
    assert main(["eval", "--resume", run_id, "--out", str(results)]) == 2
    assert "is not a run id" in capsys.readouterr().err
    assert main(["regrade", run_id, "--out", str(results), "--change", "x"]) == 2
    assert "is not a run id" in capsys.readouterr().err
    from wikiqa.experiment.params import ParameterError
    from wikiqa.experiment.step import step

    with pytest.raises((ParameterError, ValueError), match="not a run id"):
        step({"RESUME": run_id, "OUT": str(results), "TRIALS": 1, "LIMIT": 1})
    assert _tree(results.parent) == before


def test_a_header_naming_a_path_or_another_run_is_refused(world: tuple[Path, Path]) -> None:
    results, _ = world
    path = log_path(results, COMMITTED)
    saved = path.read_text()
    for forged in ("../../escape", "20261201T000000Z-other-000000"):

        def rename(bodies: list[dict[str, Any]], forged: str = forged) -> list[dict[str, Any]]:
            bodies[0]["meta"]["run_id"] = forged
            return bodies

        rechain(path, rename)
        with pytest.raises(RunLogError, match=":1: "):
            RunLog.load(results, COMMITTED)
        path.write_text(saved)


def test_verdicts_are_never_taken_from_a_log(world: tuple[Path, Path]) -> None:
    """A forged answer, and forged `pass` verdicts beside it, are graded as what they are."""
    results, _ = world
    path = log_path(results, COMMITTED)

    def forge(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for body in bodies:
            if body["kind"] == "trial":
                body["record"]["result"]["output"] = {
                    "kind": "answer", "text": "Alan Turing (FORGED)", "citations": []
                }  # fmt: skip
            if body["kind"] == "graded":
                for v in body["verdicts"]:
                    for g in v["grades"]:
                        g["verdict"] = "pass"
        return bodies

    rechain(path, forge)
    outcome = regrade(COMMITTED, results, "forged")
    assert not outcome.frame.answer.isna().any()
    assert set(outcome.frame.answer) == {"Alan Turing (FORGED)"}
    correctness = outcome.frame[outcome.frame.dimension == "correctness"]
    assert (correctness.verdict != "pass").all()  # an uncited name answers nothing here
    assert outcome.summary.task_cells["all"].passes == 0

    def carry(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:  # grades on a trial line
        grade = {"dimension": "correctness", "verdict": "pass", "tier": "code"}
        bodies[1]["record"]["grades"] = [grade]
        return bodies

    rechain(path, carry)
    with pytest.raises(RunLogError, match=":2: a trial line carries grades"):
        RunLog.load(results, COMMITTED)


def test_an_edited_reordered_duplicated_or_foreign_line_is_refused_by_line(
    world: tuple[Path, Path],
) -> None:
    results, _ = world
    path = log_path(results, COMMITTED)
    lines = path.read_text().splitlines()
    other = run_eval(RunConfig(limit=2, trials=1, out=results / "other"), progress=False)
    foreign = log_path(results / "other", other.meta.run_id).read_text().splitlines()[1]
    cases = {
        "edited": [*lines[:5], lines[5].replace('"attempts":1', '"attempts":2', 1), *lines[6:]],
        "reordered": [lines[0], lines[2], lines[1], *lines[3:]],
        "duplicated": [*lines[:4], lines[3], *lines[4:]],
        "foreign": [*lines[:3], foreign, *lines[3:]],
    }
    where = {"edited": 6, "reordered": 2, "duplicated": 5, "foreign": 4}
    for name, text in cases.items():
        path.write_text("\n".join(text) + "\n")
        with pytest.raises(RunLogError, match=f"{path.name}:{where[name]}: the chain breaks"):
            RunLog.load(results, COMMITTED)

    def twice(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:  # rechained: still refused
        return [*bodies[:3], bodies[2], *bodies[3:]]

    path.write_text("\n".join(lines) + "\n")
    rechain(path, twice)
    with pytest.raises(RunLogError, match=r":4: .* a second time"):
        RunLog.load(results, COMMITTED)


def test_a_resume_under_another_configuration_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results"
    first = run_eval(RunConfig(limit=2, trials=1, out=out), progress=False)
    log = log_path(out, first.meta.run_id).read_text()
    other = RunConfig.model_validate({"limit": 2, "trials": 1, "out": out, "abstain_below": 0.9})
    with pytest.raises(
        ValueError, match=r"was made with abstain_below=0\.0.*sets abstain_below=0\.9"
    ):
        run_eval(other, first.meta.run_id, progress=False)
    assert log_path(out, first.meta.run_id).read_text() == log


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    """Two resumes of one run, two held-out runs, two records: the second is refused at once,
    before it writes anything."""
    out = tmp_path / "results"
    first = run_eval(RunConfig(limit=2, trials=1, out=out), progress=False)
    log = log_path(out, first.meta.run_id).read_text()
    with run_lock(out, first.meta.run_id), pytest.raises(Busy, match="in use by another"):
        run_eval(RunConfig(limit=2, trials=1, out=out), first.meta.run_id, progress=False)
    assert log_path(out, first.meta.run_id).read_text() == log
    runs = sorted((out / "runs").iterdir())
    with folder_lock(out):
        with pytest.raises(Busy):
            evaluate(RunConfig(suite="dev", holdout=True, limit=1, trials=1, out=out), "record")
        with pytest.raises(Busy):
            evaluate(RunConfig(limit=2, trials=1, out=out), "record")
    assert sorted((out / "runs").iterdir()) == runs and not (out / "changelog.jsonl").exists()


def test_a_cut_last_line_is_dropped_before_the_resume_appends(tmp_path: Path) -> None:
    out = tmp_path / "results"
    first = run_eval(RunConfig(limit=3, trials=1, out=out), progress=False)
    path = log_path(out, first.meta.run_id)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:50])  # two trials, then a fragment
    resumed = run_eval(RunConfig(limit=3, trials=1, out=out), first.meta.run_id, progress=False)
    assert resumed.trials_run == 1
    again = RunLog.load(out, first.meta.run_id)
    assert again.cut_tail is None and len(again.trials) == 3
    second = run_eval(RunConfig(limit=3, trials=1, out=out), first.meta.run_id, progress=False)
    assert second.trials_run == 0  # nothing runs twice


@pytest.mark.slow
def test_a_run_answered_from_imported_replies_says_so_in_its_row_and_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.evals.climb import changelog
    from wikiqa.models import ScriptedModel

    def refuser() -> ScriptedModel:
        turn = [{"name": "refuse", "arguments": {"reason": "Not in the text."}}]
        return ScriptedModel([turn, turn], spec="scripted:refuser")

    config = RunConfig(limit=2, trials=1, out=tmp_path / "mine", concurrency=1)
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "their-home"))
    theirs = run_eval(config, model=refuser(), progress=False)
    assert theirs.meta.imported_replies is None and theirs.model_calls > 0
    shared = tmp_path / "their-replies.jsonl.gz"
    assert main(["replies", "export", str(shared)]) == 0
    sha = hashlib.sha256(shared.read_bytes()).hexdigest()
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "my-home"))
    assert main(["replies", "import", str(shared)]) == 0
    capsys.readouterr()
    mine = config.model_copy(update={"out": tmp_path / "results"})
    outcome, row = evaluate(mine, "record", model=refuser(), progress=False)
    calls = theirs.model_calls
    note = f"{calls} of {calls} calls answered from imported replies, file sha256 {sha} ({calls})"
    assert outcome.model_calls == 0 and outcome.meta.imported_replies == note
    assert set(outcome.frame["imported_replies"]) == {note}
    assert row is not None and row.imported_replies == note
    assert changelog.read(tmp_path / "results")[0].imported_replies == note
    assert note in (tmp_path / "results" / "CHANGELOG.md").read_text()
