"""The `load` benchmark: throughput, latency and memory of `wikiqa serve` under concurrent clients,
quiet and under two attacks, measured in one run against one server.

The server runs as users run it (`wikiqa serve`, a token set). `clients` token holders ask for
`seconds` three times: with nothing else going on (the quiet run); while `idle` unauthenticated
sockets sit open and never send a byte (the idle flood); and while `attackers` connections from
each of 127.0.0.2 and 127.0.0.3 send `GET /healthz` declaring a 1000-byte body they never send
(the healthz attack). Attackers re-open a connection (after a short pause, so they do not eat
the CPU the server needs: they run on the same machine) whenever the server drops one. The token
holders' requests must keep getting 200 throughout, and under the healthz attack their p99 must
stay within twice the quiet run's.

The per-client rate limit is off here (`--rate-limit 0`): the token holders share one token and
one address, so the limit would throttle all of them as one client, and the attackers go
unthrottled too, which leaves the slots as the only thing between them and the token holders.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from wikiqa.bench.report import percentile
from wikiqa.bench.sources import load_pairs

ATTACKERS = ("127.0.0.2", "127.0.0.3")
HEALTHZ_WITH_BODY = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"


def bench_load(
    clients: int = 32, seconds: float = 30.0, idle: int = 300, attackers: int = 64
) -> dict[str, float]:
    """Drive `wikiqa serve` (offline) on loopback with `clients` concurrent token holders: quiet,
    while `idle` anonymous sockets sit open, and while `attackers` connections per attacking
    address hold `/healthz` bodies open."""
    import os
    import secrets
    import socket

    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_urlsafe(24)
    auth = {"Authorization": f"Bearer {token}"}
    script = Path(sys.executable).with_name("wikiqa")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikiqa.cli"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--log-level", "warning", "--rate-limit", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=os.environ | {"WIKIQA_API_TOKEN": token},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    flood = _Flood(port, idle)
    attack = _Flood(port, attackers, payload=HEALTHZ_WITH_BODY, sources=ATTACKERS)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/healthz", timeout=1).raise_for_status()
                break
            except requests.RequestException:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("wikiqa serve did not start") from None
                time.sleep(0.1)
        questions = [p.question for p in load_pairs()]
        hostile = _hostile(base, clients=16, megabytes=50, headers=auth)
        rss_after_hostile_kb = _status_kb(server.pid, "VmHWM")
        quiet = _drive(f"{base}/api/ask", auth, questions, clients, seconds)
        flood.start()
        flood.wait_open(timeout=10)
        under = _drive(f"{base}/api/ask", auth, questions, clients, seconds)
        flood.stop()
        attack.start()
        attack.wait_open(timeout=10)
        attacked = _drive(f"{base}/api/ask", auth, questions, clients, seconds)
        attack.stop()
        peak_kb = _status_kb(server.pid, "VmHWM")
    finally:
        flood.stop()
        attack.stop()
        server.terminate()
        server.wait(timeout=10)
    return {
        "clients": clients,
        "seconds": seconds,
        "quiet_requests": quiet.requests,
        "quiet_errors": quiet.errors,
        "quiet_requests_per_s": quiet.per_second,
        "quiet_p50_ms": quiet.p50,
        "quiet_p99_ms": quiet.p99,
        "requests": under.requests,
        "errors": under.errors,
        "errors_503": under.unavailable,
        "requests_per_s": under.per_second,
        "p50_ms": under.p50,
        "p99_ms": under.p99,
        "idle_sockets_held": idle,
        "idle_sockets_open_min": flood.open_min,
        "idle_connects": flood.connects,
        "idle_dropped_by_server": flood.dropped,
        "attack_requests": attacked.requests,
        "attack_errors": attacked.errors,
        "attack_errors_503": attacked.unavailable,
        "attack_requests_per_s": attacked.per_second,
        "attack_p50_ms": attacked.p50,
        "attack_p99_ms": attacked.p99,
        "attack_p99_vs_quiet": attacked.p99 / quiet.p99 if quiet.p99 else float("inf"),
        "healthz_attackers": attackers * len(ATTACKERS),
        "healthz_attack_connects": attack.connects,
        "healthz_attack_answered": attack.answered,
        "healthz_attack_dropped_by_server": attack.dropped,
        "server_peak_rss_mb": peak_kb / 1024,
        "hostile_bodies_sent": hostile["sent"],
        "hostile_413": hostile["413"],
        "hostile_closed_mid_upload": hostile["closed"],
        "hostile_5xx": hostile["5xx"],
        "server_peak_rss_mb_after_hostile": rss_after_hostile_kb / 1024,
    }


class _Driven:
    """What `clients` token holders asking for a while got: 200s' latencies, and the rest."""

    def __init__(self, latencies: list[float], errors: int, unavailable: int, wall: float) -> None:
        self.requests = len(latencies)
        self.errors = errors
        self.unavailable = unavailable
        self.per_second = len(latencies) / wall if wall else 0.0
        self.p50 = percentile(latencies, 50) if len(latencies) > 1 else float("nan")
        self.p99 = percentile(latencies, 99) if len(latencies) > 1 else float("nan")


def _drive(
    url: str, auth: dict[str, str], questions: list[str], clients: int, seconds: float
) -> _Driven:
    """`clients` threads asking in turn for `seconds`, each on its own keep-alive session."""
    import threading

    import requests

    latencies: list[float] = []
    errors = [0, 0]  # all non-200s, of which 503s
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        session = requests.Session()
        k = offset
        while time.monotonic() < stop:
            body = {"question": questions[k % len(questions)]}
            k += clients
            start = time.perf_counter()
            try:
                code = session.post(url, json=body, headers=auth, timeout=30).status_code
            except requests.RequestException:
                code = 0
            elapsed = time.perf_counter() - start
            with lock:
                if code == 200:
                    latencies.append(elapsed * 1000)
                else:
                    errors[0] += 1
                    errors[1] += code == 503

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return _Driven(latencies, errors[0], errors[1], time.perf_counter() - began)


def _status_kb(pid: int, field: str) -> int:
    """A memory figure of a live process from /proc (0 where there is no /proc)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return 0
    lines = status.read_text().splitlines()
    return next((int(line.split()[1]) for line in lines if line.startswith(field)), 0)


class _Flood:
    """`count` connections to the server from each of `sources`, each sending `payload` (nothing,
    for an idle flood) and then holding on until the server closes it; re-opened (after a short
    pause, so the flood does not eat the machine's CPU) whenever it does."""

    def __init__(
        self,
        port: int,
        count: int,
        pause: float = 0.2,
        payload: bytes = b"",
        sources: tuple[str, ...] = ("127.0.0.1",),
    ) -> None:
        import threading

        self.port, self.pause, self.payload = port, pause, payload
        self.sources = [address for address in sources for _ in range(count)]
        self.count = len(self.sources)
        self.connects = self.dropped = self.answered = 0
        self.open_min = self.count
        self._opened = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait_open(self, timeout: float) -> None:
        self._opened.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        import selectors
        import socket

        sel = selectors.DefaultSelector()
        due: list[float] = [0.0] * self.count  # when each slot (re)connects
        socks: list[socket.socket | None] = [None] * self.count
        heard = [False] * self.count  # the server answered this connection
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                for i in range(self.count):
                    if socks[i] is None and due[i] <= now:
                        sock = socket.socket()
                        try:
                            sock.bind((self.sources[i], 0))
                            sock.connect(("127.0.0.1", self.port))
                            if self.payload:
                                sock.sendall(self.payload)
                        except OSError:
                            sock.close()
                            due[i] = now + self.pause
                            continue
                        sock.setblocking(False)
                        sel.register(sock, selectors.EVENT_READ, i)
                        socks[i] = sock
                        heard[i] = False
                        self.connects += 1
                alive = sum(s is not None for s in socks)
                if alive == self.count or self.connects >= self.count:  # all open, or all tried
                    self._opened.set()
                if self._opened.is_set():
                    self.open_min = min(self.open_min, alive)
                for key, _ in sel.select(timeout=0.05):
                    i = key.data
                    sock = socks[i]
                    assert sock is not None
                    try:
                        data = sock.recv(4096)
                    except OSError:
                        data = b""
                    if data and not heard[i]:
                        heard[i] = True
                        self.answered += 1
                    if not data:  # the server closed it: open another after the pause
                        sel.unregister(sock)
                        sock.close()
                        socks[i] = None
                        due[i] = time.monotonic() + self.pause
                        self.dropped += 1
        finally:
            for held in socks:
                if held is not None:
                    held.close()
            sel.close()


def _hostile(
    base: str, clients: int, megabytes: int, headers: dict[str, str] | None = None
) -> dict[str, int]:
    """`clients` concurrent uploads of `megabytes` MB each, chunked and declared: each must be
    refused (413) without the server holding the body."""
    import threading

    import requests

    counts = {"sent": 0, "413": 0, "closed": 0, "5xx": 0}
    lock = threading.Lock()

    def upload(i: int) -> None:
        block = b"x" * (1024 * 1024)
        sent_headers = {"content-type": "application/json", **(headers or {})}
        body: Iterator[bytes] | bytes = (
            (block for _ in range(megabytes))  # chunked: the size is only known as it is read
            if i % 2
            else block * megabytes
        )
        try:
            code = requests.post(
                f"{base}/api/ask", data=body, headers=sent_headers, timeout=60
            ).status_code
        except requests.RequestException:
            code = 0  # the server answered and closed while we were still uploading
        with lock:
            counts["sent"] += 1
            counts["413"] += code == 413
            counts["closed"] += code == 0
            counts["5xx"] += code >= 500

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts
