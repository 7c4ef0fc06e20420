"""The run journal: every finished trial appended at once, so an interrupted run resumes without
redoing finished trials (and a line cut short by a kill simply runs again)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from wikiqa.evals.running.records import TrialRecord
from wikiqa.inputs import InputError, MiB, open_append, read_bounded
from wikiqa.secrets import scrub

MAX_JOURNAL_BYTES = 512 * MiB  # a thousand-task run journals tens of megabytes


class Journal:
    """Append-only JSON lines, one per finished trial; a line is written in one call."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: TrialRecord) -> None:
        line = (scrub(record.model_dump_json()) + "\n").encode()  # no key in error text
        with self._lock:
            fd = open_append(self.path)  # never through a planted symbolic link
            try:
                os.write(fd, line)
            except OSError as err:  # a full disk: say which file
                raise OSError(err.errno, err.strerror, str(self.path)) from err
            finally:
                os.close(fd)

    def read(self) -> dict[tuple[str, int], TrialRecord]:
        """The journaled trials by (task, trial). Read bounded, like any file a colleague hands
        over: a FIFO, a device, a symbolic link or a file over the limit is an InputError naming
        it."""
        records: dict[tuple[str, int], TrialRecord] = {}
        if self.path.is_symlink():  # appended to by the run: never through a link
            raise InputError(f"{self.path}: run journal is a symbolic link; refusing it")
        if not self.path.exists():
            return records
        try:
            data = read_bounded(self.path, MAX_JOURNAL_BYTES, "run journal")
        except OSError as err:
            raise InputError(f"{self.path}: cannot read run journal: {err.strerror}") from None
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                record = TrialRecord.model_validate_json(line)
            except ValueError:
                continue  # a line cut short by a kill: that trial simply runs again
            records[(record.task_id, record.trial)] = record
        return records


def journal_dir(out: Path, run_id: str) -> Path:
    return out / "journals" / run_id
