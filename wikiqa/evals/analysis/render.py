"""The plain-text table `wikiqa eval` prints (?n = needs judge, !n = errors)."""

from __future__ import annotations

from wikiqa.evals.analysis.reduce import COLUMNS
from wikiqa.evals.analysis.summary import Cell, Summary


def render(summary: Summary) -> str:
    """The plain-text table `wikiqa eval` prints: the cells, then the run's figures."""
    return render_cells(summary) + "\n\n" + render_figures(summary)


def render_cells(summary: Summary) -> str:
    """The category x dimension block (?n = needs judge, !n = errors)."""
    header = ["category", "n", *COLUMNS, "tasks"]
    lines = []
    for category, row in summary.cells.items():
        task = summary.task_cells[category]
        lines.append(
            [category, str(task.applicable + task.errors)]
            + [_compact(row[d]) if d in row else "-" for d in COLUMNS]
            + [_compact(task)]
        )
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    table = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    table += [fmt.format(*r) for r in lines]
    return "\n".join(line.rstrip() for line in table) + "\n\n" + legend(summary.trials)


def _compact(cell: Cell) -> str:
    """A cell within a terminal's width: `12/30 [22,58] ?5`, the interval in percent."""
    marks = (f" ?{cell.needs_judge}" if cell.needs_judge else "") + (
        f" !{cell.errors}" if cell.errors else ""
    )
    if not cell.applicable:
        return f"0/0{marks}" if marks else "-"
    bounds = ""
    if cell.low is not None and cell.high is not None:
        bounds = f" [{round(cell.low * 100)},{round(cell.high * 100)}]"
    return f"{cell.passes}/{cell.applicable}{bounds}{marks}"


def legend(trials: int) -> str:
    """What every mark in the table means, which interval it is, and what to do about `?`."""
    kind = (
        "Wilson's (one trial per task; CHANGELOG.md shows the same)"
        if trials <= 1
        else f"clustered by task, {trials} trials each (CHANGELOG.md: Wilson's, on the counts)"
    )
    return "\n".join([
        "cells: passes/applicable after the majority vote over trials",
        f"[a,b]: the 95% interval of the rate, in %: {kind}",
        "?N: N tasks the offline graders left undecided: in neither side of the fraction, never a "
        "pass; decide them",
        "    with a judge (--judge SPEC, a step's JUDGE) or at human rates (wikiqa outcomes RUN_ID "
        "--labels ...)",
        "!N: N tasks lost to infrastructure errors: excluded; finish them with --resume RUN_ID",
    ])  # fmt: skip


def render_figures(summary: Summary) -> str:
    """pass@k, the answer/refuse counts, selective accuracy, SimpleQA outcomes, confidence."""
    k = summary.trials
    c = summary.confusion
    ci = summary.pass_at_1_interval
    bounds = f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else ""
    lines = [
        f"pass@1 {summary.pass_at_1:.3f}{bounds}"
        + (
            f" · pass@{k} {summary.pass_at_k:.3f} · pass^{k} {summary.pass_hat_k:.3f}"
            if k > 1
            else ""
        )
        + f" · needs_judge {summary.needs_judge} · infrastructure errors {summary.errors} (trials)",
        f"answer/refuse (trials): answerable {c['answerable']['answer']} answered, "
        f"{c['answerable']['refusal']} refused · unanswerable {c['unanswerable']['answer']} "
        f"answered, {c['unanswerable']['refusal']} refused",
    ]
    if summary.coverage is not None:
        accuracy = (
            "n/a" if summary.selective_accuracy is None else f"{summary.selective_accuracy:.3f}"
        )
        lines.append(
            f"selective accuracy {accuracy} at coverage {summary.coverage:.3f} (answerable tasks)"
        )
    if summary.simpleqa is not None:
        lines.append(summary.simpleqa.text())
    if summary.confidence is not None:
        c2 = summary.confidence
        if c2.auroc is None:
            why = "all correct" if c2.correct == c2.points else "none correct"
            auroc = f"n/a ({why}: nothing to rank)"
        else:
            auroc = f"{c2.auroc:.3f}"
        if c2.auroc_ci is not None:
            auroc += f" [{c2.auroc_ci[0]:.2f},{c2.auroc_ci[1]:.2f}]"
        ece = "n/a" if c2.ece is None else f"{c2.ece:.3f}"
        lines.append(
            f"confidence: AUROC {auroc} for correctness · ECE {ece} "
            f"({c2.points} answered trials with decided correctness)"
        )
    if summary.retrieval is not None:
        lines.append(summary.retrieval.text())
    return "\n".join(lines)
