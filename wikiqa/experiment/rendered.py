"""The results notebooks: `notebooks/hillclimb.ipynb` and `notebooks/failures.ipynb` executed over
the committed climb into `results/notebooks/`, rebuilt whenever a row is recorded there.

Each executed copy carries, in its metadata (`wikiqa.built_from`), the sha256 of the change log
it read and of the notebook it ran; `stale` compares them with the files as they are now, so a
copy built before the last recorded row (or before its notebook changed) is named as stale
rather than read as current. Executing both takes about 20 s, nothing beside a recorded run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from wikiqa.evals import results_dir
from wikiqa.evals.climb import changelog
from wikiqa.evals.climb.changelog import JSONL
from wikiqa.project import project_root, relative_to_root, repo_results

# The notebooks in notebooks/ that read the climb, rendered into results/notebooks/.
RESULTS_NOTEBOOKS = ("hillclimb", "failures")
STAMP = "built_from"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def inputs(name: str, out: Path | None = None) -> dict[str, str]:
    """What an executed results notebook is built from: the change log of `out` (the committed
    climb by default) and the notebook source, each by its sha256."""
    out = out or results_dir()
    return {
        JSONL: _sha256(out / JSONL),
        f"notebooks/{name}.ipynb": _sha256(project_root() / "notebooks" / f"{name}.ipynb"),
    }


def built_from(executed: Path) -> dict[str, str] | None:
    """The inputs an executed results notebook says it was built from (None: it says none)."""
    if not executed.exists():
        return None
    meta = json.loads(executed.read_text(encoding="utf-8")).get("metadata", {})
    found = meta.get("wikiqa", {}).get(STAMP) if isinstance(meta, dict) else None
    return dict(found) if isinstance(found, dict) else None


def stale(out: Path | None = None) -> list[str]:
    """Each results notebook of `out` (the committed climb by default) that is not built from
    the change log and notebook as they are now, with why; empty when all are current."""
    out = out or results_dir()
    found = []
    markdown = out / changelog.MARKDOWN
    if (out / JSONL).exists() and (
        not markdown.exists()
        or markdown.read_text(encoding="utf-8") != changelog.markdown_text(out)
    ):
        found.append(f"{changelog.MARKDOWN}: not what this checkout renders from {JSONL}")
    for name in RESULTS_NOTEBOOKS:
        executed = out / "notebooks" / f"{name}.ipynb"
        stamp = built_from(executed)
        if stamp is None:
            why = "not built" if not executed.exists() else "says nothing of what it was built from"
            found.append(f"{name}: {why}")
            continue
        changed = [k for k, v in inputs(name, out).items() if stamp.get(k) != v]
        if changed:
            found.append(f"{name}: built before {' and '.join(changed)} last changed")
    return found


def rebuild(out: Path | None = None) -> list[Path]:
    """Execute the results notebooks over the climb in `out` (the committed one by default) into
    `out/notebooks/`, each stamped with what it was built from. A notebook that fails keeps the
    earlier copy (`execute`) and raises `StepFailed`."""
    from wikiqa.experiment.notebooks import execute

    out = out or results_dir()
    if (out / JSONL).exists():
        changelog.render_markdown(out)  # derived from the JSON lines, as the notebooks are
    built = []
    for name in RESULTS_NOTEBOOKS:
        notebook = project_root() / "notebooks" / f"{name}.ipynb"
        stamp = inputs(name, out)
        # the notebook reads the climb it is given; the committed one is its default (None)
        shown = relative_to_root(out)
        committed = out.resolve() == results_dir().resolve()
        parameters = {} if committed else {"OUT": str(shown if shown is not None else out)}
        executed = execute(notebook, parameters, out)
        data = json.loads(executed.read_text(encoding="utf-8"))
        data.setdefault("metadata", {}).setdefault("wikiqa", {})[STAMP] = stamp
        executed.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
        built.append(executed)
    return built


def is_committed_climb(out: Path) -> bool:
    """`out` is the project's own results folder (the committed climb)."""
    try:
        return out.resolve() == repo_results().resolve()
    except OSError:
        return False
