"""The climb as a reader sees it: one chart point per step, its Δ against its own base with its
interval, significance claimed only like with like, and "did it help?" never pairing a step with
a row other than its base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def _row(i: int, experiment: str, *, suite: str = "dev", model: str = "extractive",
         kind: str = "k", vs: int | None = None, diff: float = 0.0,
         ci: tuple[float, float] = (-0.1, 0.1), significant: bool = False,
         p: float = 0.5, change: str = "") -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "date": "d", "run_id": f"r{i}", "experiment": experiment, "change": change or experiment,
        "kind": kind, "holdout": False, "suite": suite, "suite_hash": "h", "model": model,
        "judge": None, "source": "snapshot", "source_hash": None, "prompt_hash": "p",
        "git_sha": "g", "trials": 1, "dimensions": {}, "tasks_pass": [10 + i, 40],
        "pass_at_1": 0.0, "needs_judge": 0, "errors": 0, "parquet": f"runs/r{i}.parquet",
    }  # fmt: skip
    if vs is not None:
        row["delta"] = {"vs": f"r{vs}", "vs_experiment": "?", "tasks": {
            "diff": diff, "ci": list(ci), "significant": significant, "mcnemar_p": p}}  # fmt: skip
    else:
        row["delta_note"] = "no base named (a step's VS)"
    return row


def _climb(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    names = {r["run_id"]: r["experiment"] for r in rows}
    for r in rows:
        if "delta" in r:
            r["delta"]["vs_experiment"] = names[r["delta"]["vs"]]
    (tmp_path / "changelog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A climb with repeats: a step recorded, then regraded against itself; a significant Δ
    of another model (not like with like); a significant like-with-like Δ; a step with none."""
    return _climb(tmp_path, [
        _row(0, "00_base"),
        _row(1, "01_more_hits", vs=0, diff=0.2, ci=(0.1, 0.3), significant=True, p=0.001,
             change="read five hits"),
        _row(2, "02_llm", model="openai:qwen@http://127.0.0.1:8080/v1", vs=1, diff=-0.15,
             ci=(-0.25, -0.05), significant=True, p=0.01),
        _row(3, "00_base", kind="grader", vs=0, diff=0.0),  # a regrade of step 00
        _row(4, "01_more_hits", kind="grader", vs=1, diff=0.01),  # a regrade of step 01
        _row(5, "03_brief", model="openai:qwen@http://127.0.0.1:8080/v1", vs=2, diff=0.05,
             ci=(-0.02, 0.12), p=0.2),
        _row(6, "00_base", suite="public"),
        _row(7, "04_no_base", suite="public", model="openai:qwen@http://127.0.0.1:8080/v1"),
    ])  # fmt: skip


def test_significance_is_claimed_only_like_with_like(recorded: Path) -> None:
    from wikiqa.experiment import climb

    frame = climb(recorded).set_index("run_id")
    assert frame.at["r1", "like"] and frame.at["r1", "significant"]
    assert frame.at["r1", "Δ tasks [95% CI]"] == "+0.200 [+0.10, +0.30] *"
    # McNemar said significant, but against another model's run: no star, and why
    assert not frame.at["r2", "like"] and not frame.at["r2", "significant"]
    assert frame.at["r2", "Δ tasks [95% CI]"] == "-0.150 [-0.25, -0.05]"
    assert frame.at["r2", "unlike"] == "model extractive -> qwen"
    assert frame.at["r1", "delta_low"] == 0.1 and frame.at["r1", "delta_p"] == 0.001
    # no run log in this folder: the row says so
    assert set(frame["record"]) == {"no log kept"}


def test_each_step_is_one_point_standing_for_what_it_changed(recorded: Path) -> None:
    from wikiqa.experiment import climb
    from wikiqa.experiment.views import steps

    points = steps(climb(recorded))
    dev = points[points["suite"] == "dev"]
    assert list(dev["experiment"]) == ["00_base", "01_more_hits", "02_llm", "03_brief"]
    # a regrade's Δ against its own original measures the grader: the step's own row stands
    assert list(dev["run_id"]) == ["r0", "r1", "r2", "r5"]
    assert list(points[points["suite"] == "public"]["experiment"]) == ["00_base", "04_no_base"]


def test_the_chart_has_each_step_once_and_stars_only_like_with_like(recorded: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from wikiqa.experiment import climb, plot_climb
    from wikiqa.experiment.charts import climb_svg

    frame = climb(recorded)
    fig = plot_climb(frame)
    public, dev = fig.axes[:2]  # the suite of the newest row first
    assert public.get_title(loc="left").startswith("suite public:")
    ticks = [t.get_text() for t in dev.get_xticklabels()]
    assert ticks == ["00 base", "01 more hits", "02 llm", "03 brief"]  # each step once, in order
    stars = [line for line in dev.get_lines() if line.get_marker() == "*"]
    assert len(stars) == 1
    (x,), (y,) = stars[0].get_xdata(), stars[0].get_ydata()
    assert ticks[int(x)] == "01 more hits" and y == pytest.approx(0.2)
    star = frame.set_index("run_id").loc["r1"]
    assert star["like"] and star["delta_low"] > 0  # its interval excludes 0
    # the other model's significant Δ is drawn, hollow, unstarred
    hollow = [line for line in dev.get_lines() if line.get_marker() == "D"]
    assert [ticks[int(line.get_xdata()[0])] for line in hollow] == ["02 llm"]
    # a step with no Δ is a cross on 0, not a point of height 0 with an interval
    crosses = [line for line in public.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 2
    # hovering a point names its change
    svg = climb_svg(fig)
    assert "01_more_hits (dev, k): read five hits" in svg and svg.count("<title>") == 6


def test_did_it_help_pairs_a_step_with_its_base_or_says_it_cannot(recorded: Path) -> None:
    from wikiqa.experiment.views import latest_pair, pair_for

    # the newest row has no Δ: no A, and why, rather than the row before it
    a, b, why = pair_for(out=recorded)
    assert (a, b) == (None, "r7") and latest_pair(recorded) == (None, "r7")
    assert why == "04_no_base (public) has no Δ: no base named (a step's VS)"
    # a chosen B is paired with its own base, not with the newest row's
    assert pair_for("r5", out=recorded)[:2] == ("r2", "r5")
    assert pair_for("r5", "r0", recorded)[:2] == ("r0", "r5")  # RUN_A as given
    assert pair_for("elsewhere", out=recorded)[0] is None
