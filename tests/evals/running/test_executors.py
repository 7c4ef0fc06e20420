"""The executor setting without Ray: the local default never imports it, a ray executor without
the extra is a clear error, and how a run executes never changes what it records as measured."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from wikiqa.cli import main
from wikiqa.evals import ExecutorError, RunConfig
from wikiqa.evals.climb.record import parameters_hash
from wikiqa.evals.running import LocalExecutor, open_executor
from wikiqa.evals.running.served import ServedModel, canonical_spec, is_served
from wikiqa.experiment.params import ParameterError, parameters


@pytest.mark.slow
def test_the_local_executor_runs_without_importing_ray(tmp_path: Path) -> None:
    code = (
        "import sys; from wikiqa.evals import RunConfig, run_eval; "
        f"o = run_eval(RunConfig(trials=1, limit=3, out={str(tmp_path)!r}), progress=False); "
        "print(o.trials_run, 'ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["3", "False"]
    assert isinstance(open_executor("local"), LocalExecutor)


def test_ray_without_the_extra_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the `ray` extra were not installed
    with pytest.raises(ExecutorError, match=r"install the `ray` extra"):
        open_executor("ray://127.0.0.1:10001")
    code = main(["eval", "--limit", "1", "--trials", "1", "--executor", "ray", "--no-cache"])
    assert code == 3
    assert "needs Ray: install the `ray` extra" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["ray", "ray://10.0.0.5:10001", "ray:auto", "local"])
def test_executor_spellings(spec: str) -> None:
    assert RunConfig(executor=spec).executor == spec


@pytest.mark.parametrize("spec", ["slurm", "ray:", "Ray", ""])
def test_unknown_executors_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown executor"):
        RunConfig(executor=spec)


def test_the_executor_is_not_a_run_parameter() -> None:
    # the change log's identity of a run: the same measurement wherever its trials ran
    assert parameters_hash(RunConfig(executor="ray")) == parameters_hash(RunConfig())


def test_a_step_takes_executor() -> None:
    assert parameters({"EXECUTOR": "ray://head:10001"}).run_options()["executor"] == (
        "ray://head:10001"
    )
    assert parameters({}).run_options()["executor"] == "local"
    with pytest.raises((ParameterError, ValueError)):
        from wikiqa.experiment.step import _config

        _config(parameters({"EXECUTOR": "slurm"}), "x", Path("."))


def test_local_model_specs_record_one_spec_whatever_port_serves_them() -> None:
    assert is_served("local") and is_served("local:/models/qwen.gguf")
    assert not is_served("local:") and not is_served("extractive")
    assert canonical_spec("local") == "openai:smollm2-135m-instruct@http://127.0.0.1:8080/v1"
    assert canonical_spec("local:/m/Qwen2.5-0.5B.gguf") == (
        "openai:qwen2.5-0.5b@http://127.0.0.1:8080/v1"
    )
    assert ServedModel("local").spec == canonical_spec("local")  # nothing started to know it


def test_a_catalogued_local_model_is_served_by_name_with_its_spec_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`local:qwen` names the catalogue's model (not a file called "qwen"), and its recorded
    spec carries the options it is served with, whichever node or port served it."""
    from wikiqa.evals.running import served
    from wikiqa.models import local as local_model

    gguf = tmp_path / "qwen.gguf"
    asked: list[str] = []

    def gguf_for(name: str, progress: bool = True) -> Path:
        asked.append(name)
        return gguf

    monkeypatch.setattr(local_model, "gguf_for", gguf_for)
    monkeypatch.setattr(local_model, "alias", lambda path: local_model.MODELS["qwen"].alias)
    spec = served.canonical_spec("local:qwen")
    assert asked == []  # named by its catalogue alias: a cluster's driver need not hold the file
    assert (
        spec
        == f"openai:{local_model.MODELS['qwen'].alias}@http://127.0.0.1:8080/v1;tool_choice=required"
    )
    # a step's levers ride on the spec: recorded with the catalogue's options, port-free
    assert served.canonical_spec("local:qwen;short_quote=1") == spec + ",short_quote=1"
    assert served.ServedModel("local:qwen;tool_choice=auto").spec.endswith(";tool_choice=auto")
    with pytest.raises(ValueError, match="unknown option\\(s\\) shortquote"):
        served.ServedModel("local:qwen;shortquote=1")  # said before any server starts


def test_options_join_with_the_given_one_winning() -> None:
    from wikiqa.evals.running.served import join_options

    base = "openai:m@http://127.0.0.1:9/v1;tool_choice=required"
    assert join_options(base, "") == base
    assert join_options(base, "brief=1") == base + ",brief=1"
    assert join_options(base, "tool_choice=auto,brief=1") == (
        "openai:m@http://127.0.0.1:9/v1;tool_choice=auto,brief=1"
    )
    assert join_options("openai:m@http://h/v1", "brief=1") == "openai:m@http://h/v1;brief=1"


class _CountingTrial:
    """A trial function whose calls overlap if the executor lets them: it counts how many run at
    once."""

    def __init__(self, model: str, concurrency: int) -> None:
        self.config = RunConfig(model=model, concurrency=concurrency)
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, task: object, trial: int) -> int:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        return trial


@pytest.mark.parametrize(("model", "at_once"), [("extractive", 4), ("local:qwen", 1)])
def test_a_served_model_takes_one_call_at_a_time_under_the_local_executor(
    model: str, at_once: int
) -> None:
    """Its one server answers one call at a time: more threads would queue calls against their
    timeout. Any other model runs the run's concurrency."""
    trial = _CountingTrial(model, concurrency=4)
    todo: Any = [(None, t) for t in range(8)]
    done: list[Any] = list(LocalExecutor().map(cast(Any, trial), todo))
    assert sorted(done) == list(range(8)) and trial.most == at_once
