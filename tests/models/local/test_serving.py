"""A server a run started exits with the run, however the run ends (a SIGKILL included)."""

from __future__ import annotations

import json
import os
import signal
import socket
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
    (tmp_path / "m.gguf").write_bytes(b"GGUF")  # its alias is named by its content
    with pytest.raises(Stop):
        serving.start(tmp_path / "m.gguf", port=8123)
    assert seen[PARENT_ENV] == str(os.getpid())


# A stand-in for llama.cpp's server with `--api_key`: 401 without the key, 200 with it; it
# writes the environment it was given to the file named by its first argument.
_KEYED_SERVER = textwrap.dedent(
    """
    import http.server, json, os, sys
    json.dump(dict(os.environ), open(sys.argv[1], "w"))
    key = os.environ["WIKIQA_SERVER_KEY"]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.headers.get("Authorization") == f"Bearer {key}"
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(b'{"data": []}')

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
    """
)


class _Squatter:
    """A process that bound the port first: it answers every call with 200, noting headers."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen: list[dict[str, str]] = []
        self.seen = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(dict(self.headers))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"data": []}')

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _fake_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]) -> None:
    from wikiqa.models.local import serving

    monkeypatch.setattr(serving, "server_command", lambda *args, **kwargs: command)
    monkeypatch.setattr(serving, "gguf_for", lambda model: tmp_path / "m.gguf")
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    (tmp_path / "m.gguf").write_bytes(b"GGUF")


@pytest.mark.slow
def test_a_process_squatting_the_port_is_never_taken_for_the_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from wikiqa.models.local import serving

    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-key-never-sent-4411")
    squatter = _Squatter()
    try:
        # the real server, finding the port taken, exits; the squatter answers in its place
        _fake_start(monkeypatch, tmp_path, [sys.executable, "-c", "import time; time.sleep(1)"])
        with pytest.raises(serving.LocalModelError, match="another process holds that port"):
            serving.start(tmp_path / "m.gguf", port=squatter.port, timeout=20)
    finally:
        squatter.server.shutdown()
    assert squatter.seen  # it was asked, and answered 200 to a call without the key
    assert "sk-user-key-never-sent-4411" not in json.dumps(squatter.seen)


@pytest.mark.slow
def test_the_server_gets_a_key_of_its_own_and_none_of_the_users(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from wikiqa.models.local import serving

    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-key-never-sent-4411")
    port = serving.free_port()
    seen = tmp_path / "env.json"
    _fake_start(monkeypatch, tmp_path, [sys.executable, "-c", _KEYED_SERVER, str(seen), str(port)])
    started = serving.start(tmp_path / "m.gguf", port=port, timeout=30)
    try:
        env = json.loads(seen.read_text())
        assert "sk-user-key-never-sent-4411" not in env.values()
        assert env[serving.KEY_ENV] == started.key and len(started.key) >= 32
        assert started.spec.endswith(f"@http://127.0.0.1:{port}/v1")
    finally:
        started.process.kill()
        started.process.wait()


def test_two_model_files_of_one_name_are_two_models(tmp_path: Path) -> None:
    from wikiqa.models.local import serving

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "model.gguf").write_bytes(b"GGUF one")
    (tmp_path / "b" / "model.gguf").write_bytes(b"GGUF two")
    first, second = (serving.alias(tmp_path / d / "model.gguf") for d in "ab")
    assert first != second and first.startswith("model-")
    (tmp_path / "b" / "model.gguf").write_bytes(b"GGUF one")  # the same content: the same model
    assert serving.alias(tmp_path / "b" / "model.gguf") == first


@pytest.mark.slow
def test_a_server_that_dies_says_why_in_the_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from wikiqa.models.local import serving

    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-key-never-echoed-5520")
    dies = "import os, sys; sys.stderr.write('ERROR: [Errno 98] address in use ' + os.environ.get('X_ECHO', '') + '\\n'); sys.exit(1)"
    monkeypatch.setenv("X_ECHO", "sk-user-key-never-echoed-5520")  # the server never gets it
    _fake_start(monkeypatch, tmp_path, [sys.executable, "-c", dies])
    ports: list[int] = []
    real = serving.free_port

    def noted(preferred: int = 0) -> int:
        ports.append(real())
        return ports[-1]

    monkeypatch.setattr(serving, "free_port", noted)
    with pytest.raises(serving.LocalModelError) as raised:
        serving.start(tmp_path / "m.gguf", timeout=30)
    message = str(raised.value)
    assert message.endswith(": ERROR: [Errno 98] address in use")  # its last line, no secret
    assert len(ports) == serving.ATTEMPTS == 3  # a fresh port each time
    assert f":{ports[-1]} " in message


@pytest.mark.slow
def test_a_port_taken_between_check_and_bind_is_left_for_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first port found free is bound by someone else before the server binds it: the
    server exits, and the next start, on another free port, is the one returned."""
    from wikiqa.models.local import serving

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real = serving.free_port
    given = iter([taken.getsockname()[1]])
    monkeypatch.setattr(serving, "free_port", lambda preferred=0: next(given, None) or real())
    seen = tmp_path / "env.json"
    server = _KEYED_SERVER.replace(
        "int(sys.argv[2])", "int(sys.argv[sys.argv.index('--port') + 1])"
    )
    command = [sys.executable, "-c", server, str(seen)]
    monkeypatch.setattr(
        serving, "server_command", lambda gguf, host, port, **kw: [*command, "--port", str(port)]
    )
    monkeypatch.setattr(serving, "gguf_for", lambda model: tmp_path / "m.gguf")
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    try:
        started = serving.start(tmp_path / "m.gguf", timeout=30)
        try:
            port = int(started.spec.rsplit(":", 1)[1].split("/")[0])
            assert port != taken.getsockname()[1]
            assert serving._answers("127.0.0.1", port, started.key) == 200
        finally:
            started.process.kill()
            started.process.wait()
    finally:
        taken.close()
