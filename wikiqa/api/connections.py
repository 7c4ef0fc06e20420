"""Which TCP connections `wikiqa serve` keeps: an idle flood must not crowd out token holders.

uvicorn's `limit_concurrency` counts open connections, idle ones included, so a few hundred
sockets that never send a byte would make every authenticated ask a 503. Here a connection starts
*untrusted* and becomes *trusted* when it sends the headers of an authorised request (any
request, when no token is configured). Untrusted connections are the ones an anonymous client can
open for free, so only they are limited:

- a first-byte timeout (`FIRST_BYTE`): a socket that says nothing is closed soon;
- the header deadline of `DeadlineH11Protocol` (slow headers are closed after 10 s);
- at most `PER_CLIENT` untrusted connections per client address, and `MAX_UNTRUSTED` in all:
  past either, the *oldest idle* untrusted connection is closed to admit the new one. Idle means
  nothing waiting in the kernel's receive buffer either: the event loop accepts connections in
  batches, so a client that sent its request at once (every real client does) may not have been
  read yet when a flood's sockets arrive behind it. A flood then only churns its own sockets.

Trusted connections are never evicted by this; the keep-alive timeout closes them when idle and
`Shield.max_in_flight` bounds their requests. `MAX_CONNECTIONS` keeps file descriptors in hand:
over it a new connection is refused when no untrusted one is left to close.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import termios
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from wikiqa.api.shield import DeadlineH11Protocol, authorized

FIRST_BYTE = 5.0  # seconds from accept to the first byte
PER_CLIENT = 32  # untrusted connections one address may hold
MAX_UNTRUSTED = 256  # untrusted connections in all
MAX_CONNECTIONS = 2048  # every connection, trusted or not


class ConnectionGate:
    """The bookkeeping, free of sockets: which untrusted connection to close when one arrives."""

    def __init__(self, per_client: int = PER_CLIENT, max_untrusted: int = MAX_UNTRUSTED) -> None:
        self.per_client = per_client
        self.max_untrusted = max_untrusted
        self.untrusted: OrderedDict[object, str] = OrderedDict()  # oldest first
        self.per_host: Counter[str] = Counter()
        self.evicted = 0

    def admit(
        self, conn: object, host: str, pending: Callable[[object], bool] = lambda c: False
    ) -> list[object]:
        """Register a new untrusted connection; return the older ones to close for it: the
        oldest without `pending` input (or the oldest of all, if every one has some)."""
        self.untrusted[conn] = host
        self.per_host[host] += 1
        evict: list[object] = []
        if self.per_host[host] > self.per_client:
            evict.append(self._victim(pending, host))
        if len(self.untrusted) > self.max_untrusted:
            evict.append(self._victim(pending, None))
        self.evicted += len(evict)
        return evict

    def _victim(self, pending: Callable[[object], bool], host: str | None) -> object:
        mine = [c for c, h in self.untrusted.items() if host is None or h == host]
        victim = next((c for c in mine if not pending(c)), mine[0])
        self.forget(victim)
        return victim

    def forget(self, conn: object) -> None:
        """The connection is trusted now, or gone: it no longer counts."""
        host = self.untrusted.pop(conn, None)
        if host is not None:
            self.per_host[host] -= 1
            if not self.per_host[host]:
                del self.per_host[host]


def guarded_protocol(
    token: str | None,
    *,
    first_byte: float = FIRST_BYTE,
    per_client: int = PER_CLIENT,
    max_untrusted: int = MAX_UNTRUSTED,
    max_connections: int = MAX_CONNECTIONS,
) -> type[DeadlineH11Protocol]:
    """An h11 protocol class for `uvicorn.run(http=...)`, with one gate shared by its
    connections (one class per server: the gate is the server's state)."""
    gate = ConnectionGate(per_client, max_untrusted)

    class GuardedH11Protocol(DeadlineH11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._trusted = False
            self._first_byte: asyncio.TimerHandle | None = self.loop.call_later(
                first_byte, self._silent
            )
            if len(self.connections) > max_connections and not gate.untrusted:
                self.transport.close()  # all trusted and at the cap: no room for another
                return
            host = self.client[0] if self.client else "?"
            evict = gate.admit(self, host, _has_input)
            if len(self.connections) > max_connections and self in gate.untrusted:
                evict.append(gate._victim(_has_input, None))
            for old in evict:
                assert isinstance(old, GuardedH11Protocol)
                old.transport.close()

        def _pending_bytes(self) -> int:
            """Bytes the kernel holds for this socket that the loop has not read yet."""
            sock = self.transport.get_extra_info("socket")
            if sock is None or sock.fileno() < 0:
                return 0
            count = array.array("i", [0])
            try:
                fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
            except OSError:
                return 0
            return count[0]

        def _silent(self) -> None:
            self._first_byte = None
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._first_byte is not None:
                self._first_byte.cancel()
                self._first_byte = None
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            if not self._trusted and self.cycle is not None and not self.cycle.response_complete:
                headers = {k.lower(): v for k, v in self.headers}
                if authorized(headers, token):
                    self._trusted = True
                    gate.forget(self)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._first_byte is not None:
                self._first_byte.cancel()
                self._first_byte = None
            gate.forget(self)
            super().connection_lost(exc)

    def _has_input(conn: object) -> bool:
        assert isinstance(conn, GuardedH11Protocol)
        return conn._pending_bytes() > 0

    GuardedH11Protocol.gate = gate  # type: ignore[attr-defined]  # for tests and the bench
    return GuardedH11Protocol
