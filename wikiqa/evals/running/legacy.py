"""Runs recorded before the run log: a folder of `meta.json` and `journal.jsonl`, converted once.

The old journal carried grades (taken as they were on resume) and no chain. Conversion keeps
what the run did, each trial's result, and drops its grades: the converted run is graded again,
like every logged run, whenever it is read. Both files are read as input from someone else:
regular files only, bounded, never through a symlink.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from pydantic import ValidationError

from wikiqa.evals.running.records import RunMeta, TrialRecord, portable
from wikiqa.evals.running.runlog import RunLog, RunLogError
from wikiqa.inputs import MiB, TooLarge, read_bounded


def _read(path: Path, limit: int) -> str:
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise RunLogError(f"{path}: a symlink; refusing to read it")
        return read_bounded(path, limit, "journal file").decode("utf-8")
    except FileNotFoundError:
        raise RunLogError(f"{path}: no such file") from None
    except (TooLarge, UnicodeDecodeError) as err:
        raise RunLogError(f"{path}: {err}") from None


def convert(folder: Path, out: Path) -> RunLog:
    """The run log of the old journal `folder` (`meta.json`, `journal.jsonl`), under `out`."""
    try:
        meta = RunMeta.model_validate_json(_read(folder / "meta.json", MiB))
    except ValidationError as err:
        problem = err.errors()[0]["msg"]
        raise RunLogError(f"{folder / 'meta.json'}: not a run's metadata: {problem}") from None
    meta = meta.model_copy(update={"config": meta.config.model_copy(update={"out": out})})
    records: dict[tuple[str, int], TrialRecord] = {}
    for number, line in enumerate(_read(folder / "journal.jsonl", 1024 * MiB).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = TrialRecord.model_validate(json.loads(line))
        except (ValueError, RecursionError):
            continue  # a line cut short by a kill: that trial ran again, later in the file
        key = (record.task_id, record.trial)
        if key in records and not records[key].result.infrastructure_error:
            raise RunLogError(f"{folder / 'journal.jsonl'}:{number}: {key} a second time")
        records[key] = record
    header = portable(meta).model_dump(mode="json")
    header["config"].pop("out")
    log = RunLog.create(out, meta, header)
    for record in records.values():
        log.append_trial(record)
    if meta.cassette is not None and meta.cassette_hash is not None:
        log.bind_cassette(meta.cassette, meta.cassette_hash)
    return log
