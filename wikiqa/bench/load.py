"""The `load` benchmark: throughput, latency and memory of `wikiqa serve` under concurrent clients."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from wikiqa.bench.report import percentile
from wikiqa.bench.sources import load_pairs


def bench_load(clients: int = 32, seconds: float = 30.0) -> dict[str, float]:
    """Drive `wikiqa serve` (offline) on loopback with `clients` concurrent clients."""
    import socket
    import threading

    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = Path(sys.executable).with_name("wikiqa")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikiqa.cli"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
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
        latencies: list[float] = []
        errors = [0]
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
                    ok = session.post(f"{base}/api/ask", json=body, timeout=30).status_code == 200
                except requests.RequestException:
                    ok = False
                elapsed = time.perf_counter() - start
                with lock:
                    if ok:
                        latencies.append(elapsed * 1000)
                    else:
                        errors[0] += 1

        hostile = _hostile(base, clients=16, megabytes=50)
        rss_after_hostile_kb = _status_kb(server.pid, "VmHWM")
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        peak_kb = _status_kb(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {
        "clients": clients,
        "seconds": seconds,
        "requests": len(latencies),
        "errors": errors[0],
        "requests_per_s": len(latencies) / wall,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "server_peak_rss_mb": peak_kb / 1024,
        "hostile_bodies_sent": hostile["sent"],
        "hostile_413": hostile["413"],
        "hostile_closed_mid_upload": hostile["closed"],
        "hostile_5xx": hostile["5xx"],
        "server_peak_rss_mb_after_hostile": rss_after_hostile_kb / 1024,
    }


def _status_kb(pid: int, field: str) -> int:
    """A memory figure of a live process from /proc (0 where there is no /proc)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return 0
    lines = status.read_text().splitlines()
    return next((int(line.split()[1]) for line in lines if line.startswith(field)), 0)


def _hostile(base: str, clients: int, megabytes: int) -> dict[str, int]:
    """`clients` concurrent uploads of `megabytes` MB each, chunked and declared: each must be
    refused (413) without the server holding the body."""
    import threading

    import requests

    counts = {"sent": 0, "413": 0, "closed": 0, "5xx": 0}
    lock = threading.Lock()

    def upload(i: int) -> None:
        block = b"x" * (1024 * 1024)
        headers = {"content-type": "application/json"}
        body: Iterator[bytes] | bytes = (
            (block for _ in range(megabytes))  # chunked: the size is only known as it is read
            if i % 2
            else block * megabytes
        )
        try:
            code = requests.post(
                f"{base}/api/ask", data=body, headers=headers, timeout=60
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
