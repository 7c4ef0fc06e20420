"""The run log: one append-only record per run, which eval, resume, regrade and replay all read.

`results/runs/RUN_ID.log.jsonl`, one JSON object a line:

- line 1, `header`: the run's metadata (`RunMeta`: its configuration, with the agent's levers;
  the suite and its hash; the source and its hash; the model and judge specs; git sha and
  versions);
- `trial`: one finished trial, the agent's whole result and trace, without grades (a trial lost
  to infrastructure is logged too, and a later line for the same trial, its rerun, replaces it);
- `cassette`: what the source answered, bound by its file name and content hash;
- `graded`: one grading pass, every trial's verdicts as graded then. A pass is a record for
  readers; nothing is ever graded from it: every run, resume and regrade grades the trials
  again (`wikiqa.evals.running.scoring.score`).

Every line carries `chain`, a hash over the previous line's chain and this line's content. A
line edited, reordered, duplicated or taken from another run breaks the chain, and the log is
refused at load, naming the line. The chain shows that a log is whole and in order, not who wrote
it: a log someone hands you is as trustworthy as they are, which is why a log never supplies a
model, a judge, a source URL or a verdict to this machine. A last line cut short by a kill (no
newline) is set aside, and dropped before the next append.

The parquet, the summary and the change-log row are derived from the trials and their fresh
grades, in that direction; nothing a run wrote is read back by the same run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from wikiqa.evals.running.records import RunMeta, TrialRecord
from wikiqa.inputs import MiB, TooLarge, read_bounded
from wikiqa.outputs import append_line, check_run_id, inside, write_atomic
from wikiqa.secrets import scrub

FORMAT = "wikiqa-runlog/1"
SUFFIX = ".log.jsonl"
LIMIT = 1024 * MiB  # a whole-suite run of a real model is tens of MiB; more is not a run log
LineKind = Literal["header", "trial", "cassette", "graded"]


class RunLogError(ValueError):
    """A run log that cannot be read as one: the message names the file and the line."""


class CassetteBinding(BaseModel):
    """The run's cassette: its file (relative to the results folder) and its content hash."""

    file: str
    sha256: str


class Verdicts(BaseModel):
    """One trial's grading, as a pass recorded it."""

    task_id: str
    trial: int
    decision: str
    grades: list[dict[str, Any]]
    judge_error: str | None = None


def log_path(out: Path, run_id: str) -> Path:
    """Where run `run_id`'s log lives under the results folder `out`."""
    return out / "runs" / f"{check_run_id(run_id)}{SUFFIX}"


def _canonical(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _link(previous: str, body: str) -> str:
    return hashlib.sha256(f"{previous}\n{body}".encode()).hexdigest()[:32]


class RunLog:
    """An open run log: its header, its trials by (task, trial), its cassette binding and the
    grading passes recorded so far. `create` starts one, `load` reads and checks one; `append_*`
    add lines, each one whole (`wikiqa.outputs.append_line`), never through a symlink."""

    def __init__(self, path: Path, root: Path, meta: RunMeta, chain: str) -> None:
        self.path, self.root, self.meta, self._chain = path, root, meta, chain
        self.trials: dict[tuple[str, int], TrialRecord] = {}
        self.cassette: CassetteBinding | None = None
        self.passes = 0
        self.cut_tail: str | None = None  # a last line cut short by a kill, set aside

    # -- writing ---------------------------------------------------------------------------

    @classmethod
    def create(cls, out: Path, meta: RunMeta, header: dict[str, Any]) -> RunLog:
        """A new log for `meta`'s run under `out` (refused if one exists): `header` is the
        metadata as it is committed (`RunMeta` dumped, with machine paths made portable)."""
        path = inside(log_path(out, meta.run_id), out)
        if path.exists() or path.is_symlink():
            raise RunLogError(f"{path}: a run log already exists; resume the run instead")
        log = cls(path, out, meta, FORMAT)
        log._append({"kind": "header", "format": FORMAT, "meta": header})
        return log

    def _append(self, body: dict[str, Any]) -> None:
        # No key reaches the record, whatever the error text held; scrubbed, then canonical again
        # so the chain is over exactly the bytes a reader will see.
        text = _canonical(json.loads(scrub(_canonical(body))))
        chain = _link(self._chain, text)
        line = text[:-1] + f',"chain":"{chain}"}}' if text != "{}" else f'{{"chain":"{chain}"}}'
        append_line(self.path, (line + "\n").encode(), self.root)
        self._chain = chain

    def append_trial(self, record: TrialRecord) -> None:
        """A finished trial: its result, without grades (grading is `score`'s, every time)."""
        key = (record.task_id, record.trial)
        if key in self.trials and not self.trials[key].result.infrastructure_error:
            raise RunLogError(f"{self.path}: {key[0]} trial {key[1]} is already logged")
        bare = record.model_copy(update={"grades": [], "judge_error": None})
        self._append({"kind": "trial", "record": bare.model_dump(mode="json")})
        self.trials[key] = bare

    def bind_cassette(self, file: str, sha256: str) -> None:
        binding = CassetteBinding(file=file, sha256=sha256)
        self._append({"kind": "cassette", **binding.model_dump()})
        self.cassette = binding

    def append_pass(self, judge: str | None, graded: dict[tuple[str, int], TrialRecord]) -> None:
        """A grading pass: what every trial was graded this time (a record, never an input)."""
        verdicts = [
            Verdicts(
                task_id=r.task_id, trial=r.trial, decision=r.decision,
                grades=[g.model_dump(mode="json") for g in r.grades], judge_error=r.judge_error,
            ).model_dump(mode="json")
            for _, r in sorted(graded.items())
        ]  # fmt: skip
        self.passes += 1
        self._append({"kind": "graded", "pass": self.passes, "judge": judge, "verdicts": verdicts})

    def drop_cut_tail(self) -> None:
        """Rewrite the file without a last line cut short by a kill (before appending to it)."""
        if self.cut_tail is None:
            return
        data = read_bounded(self.path, LIMIT, "run log")
        write_atomic(self.path, data[: len(data) - len(self.cut_tail.encode())], self.root)
        self.cut_tail = None

    # -- reading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, out: Path, run_id: str) -> RunLog:
        """Run `run_id`'s log under `out`, every line checked: the chain, each line's shape, no
        (task, trial) twice, the header naming this run. Refused (RunLogError) at the first
        line that fails, named; a symlink, a FIFO or a device is refused before it is read."""
        path = log_path(out, run_id)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise RunLogError(f"{path}: no such run log") from None
        if stat.S_ISLNK(info.st_mode):
            raise RunLogError(f"{path}: a symlink; a run log is read only as a regular file")
        try:
            data = read_bounded(path, LIMIT, "run log").decode("utf-8")
        except (TooLarge, UnicodeDecodeError) as err:
            raise RunLogError(f"{path}: {err}") from None
        lines = data.split("\n")
        tail = lines.pop()  # "" when the file ends with a newline, else a line cut short
        if not lines and not tail:
            raise RunLogError(f"{path}: empty")
        return cls._parse(path, out, run_id, lines, tail)

    @classmethod
    def _parse(cls, path: Path, out: Path, run_id: str, lines: list[str], tail: str) -> RunLog:
        chain, log = FORMAT, None
        for number, line in enumerate(lines, 1):
            where = f"{path}:{number}"
            body, chain = _checked(where, line, chain)
            kind = body.get("kind")
            if number == 1:
                log = cls(path, out, _header(where, body, run_id, out), chain)
                continue
            if log is None or kind == "header":
                raise RunLogError(f"{where}: a second header; this is not one run's log")
            log._chain = chain
            try:
                log._read(body)
            except (ValidationError, KeyError, TypeError) as err:
                raise RunLogError(f"{where}: not a {kind} line: {_first(err)}") from None
            except RunLogError as err:
                raise RunLogError(f"{where}: {err}") from None
        if log is None:
            raise RunLogError(f"{path}:1: no header (a line cut short)")
        log.cut_tail = tail or None
        return log

    def _read(self, body: dict[str, Any]) -> None:
        kind = body["kind"]
        if kind == "trial":
            record = TrialRecord.model_validate(body["record"])
            key = (record.task_id, record.trial)
            if key in self.trials and not self.trials[key].result.infrastructure_error:
                raise RunLogError(f"{key[0]} trial {key[1]} a second time")
            if record.grades or record.judge_error is not None:
                raise RunLogError("a trial line carries grades; grades are never read back")
            self.trials[key] = record
        elif kind == "cassette":
            self.cassette = CassetteBinding.model_validate(
                {k: v for k, v in body.items() if k != "kind"}
            )
        elif kind == "graded":
            self.passes = int(body["pass"])
        else:
            raise RunLogError(f"unknown line kind {kind!r}")


def find_log(run: str | Path, out: Path) -> RunLog:
    """The log `run` names: a `*.log.jsonl` file (its results folder the one above `runs/`), or
    a run id looked up under `out`, then its scratch area."""
    path = Path(run)
    if path.name.endswith(SUFFIX) and (path.exists() or path.is_symlink()):
        return RunLog.load(path.parent.parent, path.name.removesuffix(SUFFIX))
    run_id = check_run_id(str(run))
    for folder in (out, out / "scratch"):
        if log_path(folder, run_id).exists():
            return RunLog.load(folder, run_id)
    raise RunLogError(f"no log of run {run_id!r} in {out / 'runs'} or {out / 'scratch' / 'runs'}")


def _checked(where: str, line: str, previous: str) -> tuple[dict[str, Any], str]:
    """The line's content and chain, if the line is a JSON object whose chain follows from
    `previous`; else RunLogError. Nesting is capped before parsing (a hostile line of `[`s)."""
    if len(line) - len(line.lstrip("[{")) > 64:
        raise RunLogError(f"{where}: nested too deep")
    try:
        body = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise RunLogError(f"{where}: not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("chain"), str):
        raise RunLogError(f"{where}: not a run-log line (no chain)")
    chain = body.pop("chain")
    if _link(previous, _canonical(body)) != chain:
        raise RunLogError(
            f"{where}: the chain breaks here: the line was edited, moved, repeated or taken "
            "from another run"
        )
    return body, chain


def _header(where: str, body: dict[str, Any], run_id: str, out: Path) -> RunMeta:
    if body.get("kind") != "header" or body.get("format") != FORMAT:
        raise RunLogError(f"{where}: not a {FORMAT} header")
    meta = body.get("meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise RunLogError(f"{where}: the header holds no run metadata")
    # The results folder is where the log is read, never a path the log names.
    try:
        found = RunMeta.model_validate(meta | {"config": meta["config"] | {"out": str(out)}})
    except ValidationError as err:
        raise RunLogError(f"{where}: {_first(err)}") from None
    if found.run_id != run_id:
        raise RunLogError(f"{where}: the header names run {found.run_id!r}, not {run_id!r}")
    return found


def _first(err: Exception) -> str:
    if isinstance(err, ValidationError):
        e = err.errors()[0]
        return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
    return str(err)
