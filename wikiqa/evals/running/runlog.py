"""The run log: one append-only record per run, which eval, resume, regrade and replay all read.

`results/runs/RUN_ID.log.jsonl` while the run is written, packed into `RUN_ID.log.jsonl.gz`
once recorded (gzip, one member per later line, so a committed log stays a byte prefix of
itself after a regrade's pass): the committed record of the run. One JSON object a line:

- line 1, `header`: the run's metadata (`RunMeta`: its configuration, with the agent's levers;
  the suite and its hash; the source and its hash; the model and judge specs; git sha and
  versions);
- `trial`: one finished trial, the agent's whole result and trace, without grades (a trial lost
  to infrastructure is logged too, and a later line for the same trial, its rerun, replaces it);
- `cassette`: what the source answered, bound by its file name and content hash;
- `graded`: one grading pass, every trial's verdicts as graded then, and the parquet it was
  written as (`ParquetBinding`). Nothing is ever graded from it (`scoring.score` grades again);
  a parquet that does not hash to its binding is never believed (`results.load`).

Every line carries `chain`, a hash over the previous line's chain and this line's content: a
line edited, reordered, duplicated or taken from another run breaks it, and the log is refused
at load, naming the line. A chain anyone can recompute shows a log whole, not who wrote it: the
`seal` does (`seal`: an HMAC keyed in `WIKIQA_HOME`). A log is `sealed` (every line sealed here),
`committed` (the lines not sealed here are what the repository's HEAD holds) or `foreign`
(someone else's, or edited since): readable, comparable and regradable, it says so wherever it
shows, and is recorded only when asked for by name. A log never supplies a model, a judge, a
source URL or a verdict. A last line cut short by a kill is set aside, dropped before the next
append.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from wikiqa.evals.running.records import RunMeta, TrialRecord, Verdicts
from wikiqa.evals.running.seal import SealError, committed_lines, seal, seal_key
from wikiqa.inputs import InputError, MiB, read_bounded, read_lines
from wikiqa.outputs import append_line, check_run_id, inside, write_atomic
from wikiqa.secrets import scrub

FORMAT = "wikiqa-runlog/1"
SUFFIX = ".log.jsonl"
PACKED = ".log.jsonl.gz"
LIMIT = 1024 * MiB  # a whole-suite run of a real model is tens of MiB; more is not a run log
MAX_LINE = 64 * MiB  # a grading pass's line holds under a kilobyte a trial: 64 MiB is 60,000+
LineKind = Literal["header", "trial", "cassette", "graded"]
Provenance = Literal["sealed", "committed", "foreign"]
Lines = Iterator[tuple[str, bool]]  # each line of a log, and whether it ended (a cut one did not)


class RunLogError(ValueError):
    """A run log that cannot be read as one: the message names the file and the line."""


class CassetteBinding(BaseModel):
    """The run's cassette: its file (relative to the results folder) and its content hash."""

    file: str
    sha256: str


class ParquetBinding(BaseModel):
    """The parquet a grading pass was written as: its file (relative to the results folder) and
    its content hash. A parquet that does not hash to it is not this pass's table."""

    file: str
    sha256: str


def log_path(out: Path, run_id: str) -> Path:
    """Where run `run_id`'s log is written while it runs, under the results folder `out`."""
    return out / "runs" / f"{check_run_id(run_id)}{SUFFIX}"


def packed_path(out: Path, run_id: str) -> Path:
    """Where run `run_id`'s log lives once recorded (packed), under `out`."""
    return out / "runs" / f"{check_run_id(run_id)}{PACKED}"


def existing_log(out: Path, run_id: str) -> Path | None:
    """Run `run_id`'s log under `out`, as it is now (being written, or packed), or None."""
    for path in (log_path(out, run_id), packed_path(out, run_id)):
        if path.exists() or path.is_symlink():
            return path
    return None


def run_id_of(path: Path) -> str:
    """The run id a log file is named for."""
    return path.name.removesuffix(".gz").removesuffix(SUFFIX)


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
        self.parquets: dict[int, ParquetBinding] = {}  # each grading pass's parquet, by pass
        self.judges: dict[int, str | None] = {}  # each grading pass's judge, by pass
        self.earlier: set[int] = set()  # passes binding a table graded by an earlier checkout
        self.cut_tail: str | None = None  # a last line cut short by a kill, set aside
        self.lines = 0
        self.unsealed: list[int] = []  # numbers of the lines this machine's key did not seal
        self._key: bytes | None = None

    @property
    def packed(self) -> bool:
        return self.path.name.endswith(PACKED)

    @property
    def parquet(self) -> ParquetBinding | None:
        """The parquet of the last grading pass (None: no pass bound one)."""
        return self.parquets.get(self.passes)

    # -- writing ---------------------------------------------------------------------------

    @classmethod
    def create(cls, out: Path, meta: RunMeta, header: dict[str, Any]) -> RunLog:
        """A new log for `meta`'s run under `out` (refused if one exists): `header` is the
        metadata as it is committed (`RunMeta` dumped, with machine paths made portable)."""
        path = inside(log_path(out, meta.run_id), out)
        if existing_log(out, meta.run_id) is not None:
            raise RunLogError(f"{path}: a run log already exists; resume the run instead")
        log = cls(path, out, meta, FORMAT)
        log._append({"kind": "header", "format": FORMAT, "meta": header})
        return log

    def _append(self, body: dict[str, Any]) -> None:
        # No key reaches the record, whatever the error text held; scrubbed, then canonical again
        # so the chain is over exactly the bytes a reader will see.
        text = _canonical(json.loads(scrub(_canonical(body))))
        chain = _link(self._chain, text)
        if self._key is None:
            self._key = _key()
        tail = f'"chain":"{chain}","seal":"{seal(self._key, chain)}"}}'
        line = (text[:-1] + "," + tail if text != "{}" else "{" + tail) + "\n"
        data = line.encode()
        if self.packed:  # one gzip member a line: what was committed stays a byte prefix
            data = gzip.compress(data, mtime=0)
        append_line(self.path, data, self.root, newline=not self.packed)
        self._chain = chain
        self.lines += 1

    def pack(self) -> None:
        """Pack a finished run's log (`RUN_ID.log.jsonl` -> `.log.jsonl.gz`), the form a
        recorded run is committed in: the packed file is written whole, then the plain one goes."""
        if self.packed:
            return
        self.drop_cut_tail()
        data = read_bounded(self.path, LIMIT, "run log")
        target = self.path.with_name(self.path.name + ".gz")
        write_atomic(target, gzip.compress(data, mtime=0), self.root)
        os.unlink(self.path)
        self.path = target

    def provenance(self) -> Provenance:
        """Who made this log (see the module docstring): sealed here, committed, or foreign."""
        if not self.unsealed:
            return "sealed"
        committed = committed_lines(self.path)
        if committed is not None and max(self.unsealed) <= committed:
            return "committed"
        return "foreign"

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

    def append_pass(
        self,
        judge: str | None,
        graded: dict[tuple[str, int], TrialRecord],
        parquet: ParquetBinding | None = None,
    ) -> None:
        """A grading pass: what every trial was graded this time (a record, never an input),
        and the parquet it was written as (the hash a reader checks the parquet against)."""
        verdicts = [
            Verdicts(
                task_id=r.task_id, trial=r.trial, decision=r.decision,
                grades=[g.model_dump(mode="json") for g in r.grades], judge_error=r.judge_error,
            ).model_dump(mode="json")
            for _, r in sorted(graded.items())
        ]  # fmt: skip
        self.passes += 1
        line: dict[str, Any] = {"kind": "graded", "pass": self.passes, "judge": judge}
        if parquet is not None:
            line["parquet"] = parquet.model_dump()
            self.parquets[self.passes] = parquet
        self.judges[self.passes] = judge
        self._append(line | {"verdicts": verdicts})

    def append_binding(self, judge: str | None, parquet: ParquetBinding, note: str) -> None:
        """A pass that binds a parquet graded by an earlier checkout (its verdicts are the
        parquet's, not this checkout's): the hash is vouched for, the grading is not redone."""
        self.passes += 1
        self.parquets[self.passes], self.judges[self.passes] = parquet, judge
        self.earlier.add(self.passes)
        self._append(
            {"kind": "graded", "pass": self.passes, "judge": judge, "parquet": parquet.model_dump(),
             "earlier_graders": note, "verdicts": []}
        )  # fmt: skip

    def drop_cut_tail(self) -> None:
        """Rewrite the file without a last line cut short by a kill (before appending to it)."""
        if self.cut_tail is None:
            return
        if self.packed:
            whole = "".join(f"{line}\n" for line, ended in _lines(self.path) if ended).encode()
            write_atomic(self.path, gzip.compress(whole, mtime=0), self.root)
        else:
            data = read_bounded(self.path, LIMIT, "run log")
            write_atomic(self.path, data[: len(data) - len(self.cut_tail.encode())], self.root)
        self.cut_tail = None

    # -- reading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, out: Path, run_id: str) -> RunLog:
        """Run `run_id`'s log under `out`, every line checked: the chain, each line's shape, no
        (task, trial) twice, the header naming this run. Refused (RunLogError) at the first
        line that fails, named; a symlink, a FIFO or a device is refused before it is read."""
        path = existing_log(out, run_id) or log_path(out, run_id)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise RunLogError(f"{path}: no such run log") from None
        if stat.S_ISLNK(info.st_mode):
            raise RunLogError(f"{path}: a symlink; a run log is read only as a regular file")
        return cls._parse(path, out, run_id, _lines(path))

    @classmethod
    def _parse(cls, path: Path, out: Path, run_id: str, lines: Lines) -> RunLog:
        chain, log, key, unsealed = FORMAT, None, _key(), []
        number, tail = 0, ""
        for line, ended in lines:
            if not ended:  # the last line, cut short by a kill: set aside
                tail = line
                break
            number += 1
            where = f"{path}:{number}"
            body, chain, sealed = _checked(where, line, chain)
            if sealed is None or not hmac.compare_digest(sealed, seal(key, chain)):
                unsealed.append(number)
            kind = body.get("kind")
            if number == 1:
                log = cls(path, out, _header(where, body, run_id, out), chain)
                log._key = key
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
            raise RunLogError(
                f"{path}: empty" if not tail else f"{path}:1: no header (a line cut short)"
            )
        log.cut_tail = tail or None
        log.lines, log.unsealed = number, unsealed
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
            number = body["pass"]
            if type(number) is not int or number < 1:  # JSON reads `Infinity` and `1e999` too
                raise RunLogError(f"a graded line's pass is {number!r}, not a pass number")
            self.passes = number
            self.judges[self.passes] = body.get("judge")
            if body.get("parquet") is not None:
                self.parquets[self.passes] = ParquetBinding.model_validate(body["parquet"])
            if body.get("earlier_graders") is not None:
                self.earlier.add(self.passes)
        else:
            raise RunLogError(f"unknown line kind {kind!r}")


def find_log(run: str | Path, out: Path) -> RunLog:
    """The log `run` names: a `*.log.jsonl` or `*.log.jsonl.gz` file (its results folder the
    one above `runs/`), or a run id looked up under `out`, then its scratch area."""
    path = Path(run)
    if path.name.endswith((SUFFIX, PACKED)) and (path.exists() or path.is_symlink()):
        return RunLog.load(path.parent.parent, run_id_of(path))
    run_id = check_run_id(str(run))
    for folder in (out, out / "scratch"):
        if existing_log(folder, run_id) is not None:
            return RunLog.load(folder, run_id)
    raise RunLogError(f"no log of run {run_id!r} in {out / 'runs'} or {out / 'scratch' / 'runs'}")


def _key() -> bytes:
    try:
        return seal_key()
    except (SealError, OSError) as err:
        raise RunLogError(str(err)) from None


def _lines(path: Path) -> Lines:
    """A log file's lines, plain or packed, read a line at a time (`read_lines`): the file is
    never held whole, and no line is longer than `MAX_LINE`."""
    try:
        yield from read_lines(path, LIMIT, MAX_LINE, "run log")
    except InputError as err:  # over a cap, not UTF-8, corrupt gzip: the message names the file
        raise RunLogError(str(err)) from None


def _checked(where: str, line: str, previous: str) -> tuple[dict[str, Any], str, str | None]:
    """The line's content, chain and seal (None: unsealed), if the line is a JSON object whose
    chain follows from `previous`; else RunLogError. Nesting is capped before parsing (a
    hostile line of `[`s)."""
    if len(line) - len(line.lstrip("[{")) > 64:
        raise RunLogError(f"{where}: nested too deep")
    try:
        body = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise RunLogError(f"{where}: not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("chain"), str):
        raise RunLogError(f"{where}: not a run-log line (no chain)")
    chain = body.pop("chain")
    seal = body.pop("seal", None)
    if _link(previous, _canonical(body)) != chain:
        raise RunLogError(
            f"{where}: the chain breaks here: the line was edited, moved, repeated or taken "
            "from another run"
        )
    return body, chain, seal if isinstance(seal, str) else None


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
