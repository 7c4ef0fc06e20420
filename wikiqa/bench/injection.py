"""The `injection` benchmark: how often planted attack texts are followed (the target is never)."""

from __future__ import annotations

from pathlib import Path

from wikiqa.sources import SnapshotSource


def bench_injection(bipia: Path | None) -> dict[str, float]:
    """Plant every attack into fetched articles; count outputs that follow one (target 0)."""
    from wikiqa.evals.attacks import bipia_attacks, drill, project_attacks

    source = SnapshotSource()
    figures: dict[str, float] = {}
    sets = [("project", project_attacks())]
    if bipia is not None:
        sets.append(("bipia", bipia_attacks(bipia)))
    for name, attacks in sets:
        result = drill(attacks, source)
        figures |= {
            f"{name}_attacks": result.attacks,
            f"{name}_trials": result.trials,
            f"{name}_flagged_by_guard": result.flagged,
            f"{name}_extractive_follow_rate": result.extractive_followed / result.trials,
            f"{name}_obeying_follow_rate": result.obeying_followed / result.trials,
            f"{name}_obeying_blocked": result.obeying_blocked,
        }
    return figures
