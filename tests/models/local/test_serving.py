"""A server a run started exits with the run, however the run ends (a SIGKILL included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wikiqa.models.local.serving import PARENT_ENV

# The middle process stands for a run: it starts a child that watches it, as the server does
# under `start()`, prints the child's pid and waits to be killed.
_RUN = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from wikiqa.models.local.serving import PARENT_ENV
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import os, time\\n"
         "from wikiqa.models.local.serving import PARENT_ENV, exit_with_parent\\n"
         "exit_with_parent(int(os.environ[PARENT_ENV]), poll=0.1)\\n"
         "time.sleep(120)\\n"],
        env=os.environ | {PARENT_ENV: str(os.getpid())},
    )
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


@pytest.mark.slow
def test_a_watched_child_outlives_nothing_once_its_parent_is_killed() -> None:
    run = subprocess.Popen([sys.executable, "-c", _RUN], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    child = int(run.stdout.readline())
    try:
        time.sleep(0.5)
        assert _alive(child), "the child must run while its parent does"
        run.send_signal(signal.SIGKILL)  # no atexit, no handler: what a killed run does
        run.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the child outlived its killed parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_start_tells_the_server_whose_child_it_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from wikiqa.models.local import serving

    seen: dict[str, str] = {}

    class Stop(Exception):
        pass

    def popen(command: list[str], env: dict[str, str], **kwargs: object) -> None:
        seen.update(env)
        raise Stop

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(serving, "gguf_for", lambda model: tmp_path / "m.gguf")
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    with pytest.raises(Stop):
        serving.start(tmp_path / "m.gguf", port=8123)
    assert seen[PARENT_ENV] == str(os.getpid())
