"""The trial function under a Ray of the executor's own: shipped to Ray tasks and to host actors,
it gives the local executor's verdicts, and a rerun is answered by the driver's response cache
through its actor, wherever the trials land. Each Ray run is a fresh process (Ray reads its
settings once, at import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikiqa.evals import RunConfig, run_eval

pytestmark = pytest.mark.ray
pytest.importorskip("ray")

SCRIPT = """
import json, sys
import pandas as pd
from wikiqa.evals import RunConfig, run_eval
from wikiqa.evals.running.executors import open_executor

executor = open_executor("ray")
executor.hosts = json.loads(sys.argv[2])
config = RunConfig(limit=4, trials=2, out=sys.argv[1], executor="ray", max_tokens=64)
runs = []
for _ in range(2):
    o = run_eval(config, executor=executor, progress=False)
    frame = pd.read_parquet(o.parquet)
    runs.append({"calls": [o.trials_run, o.model_calls, o.cached_calls],
                 "nodes": frame["node"].nunique(), "cassette": o.meta.cassette_hash,
                 "rows": frame[["task_id", "trial", "dimension", "answer", "verdict"]]
                 .sort_values(["task_id", "trial", "dimension"]).values.tolist()})
print("RESULT " + json.dumps(runs, default=str))
"""


@pytest.mark.parametrize("hosts", [None, 2])
def test_the_shipped_trial_function_gives_the_local_verdicts(
    tmp_path: Path, hosts: int | None
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "ray"), json.dumps(hosts)],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    first, again = json.loads(line.removeprefix("RESULT "))
    local = run_eval(
        RunConfig(limit=4, trials=2, out=tmp_path / "local", cache=False), progress=False
    )
    frame = local.frame.sort_values(["task_id", "trial", "dimension"])
    rows = frame[["task_id", "trial", "dimension", "answer", "verdict"]].values.tolist()
    assert json.loads(json.dumps(rows, default=str)) == first["rows"] == again["rows"]
    assert first["nodes"] == 1 and first["cassette"] == local.meta.cassette_hash
    assert first["calls"][0] == again["calls"][0] == 8
    assert again["calls"][1] == 0 and again["calls"][2] == first["calls"][1] + first["calls"][2]
