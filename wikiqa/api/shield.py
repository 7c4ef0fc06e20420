"""What stands between the network and the app: authentication, rate limits, body limits, timeouts.

A pure ASGI middleware, so it runs before FastAPI reads or parses a byte of the body:

- A request without the token never holds an in-flight slot: it is answered from its headers
  alone, 401 for any path but `/healthz`, and `/healthz` itself (`{"status": "ok"}`) without
  waiting for a body it may declare (the connection is then closed, since that body is never
  read). Slots are thereby the token holders' alone, however many anonymous clients there are.
- Each client (keyed by its bearer token when it presents the right one, by its address
  otherwise) may make `rate` requests a second, in bursts of `burst`; past that the answer is 429
  with Retry-After, from the headers, before any slot is taken (`RateLimiter`).
- A body over the cap is 413 (from its Content-Length, or as soon as a chunked body passes the
  cap), a body that trickles in is 408, and past `max_in_flight` concurrent requests the answer
  is 503 with Retry-After. Memory per request is bounded by the cap, whatever clients send.

`DeadlineH11Protocol` closes connections that do not finish their request headers in time:
uvicorn times out idle keep-alive connections but not a client that sends headers slowly.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 64 * 1024
LIVENESS = "/healthz"  # the one path that answers without the token (and then says only "ok")
BURST_SECONDS = 2.0  # a client may spend this many seconds of its rate limit at once


def check_token(token: str | None) -> str | None:
    """The configured token, or ValueError when no client could present it as configured.

    An empty token would let `Authorization: Bearer ` in, so it is an error at start,
    not "no auth". Header values are bytes, and clients disagree on how to encode non-ASCII
    (curl sends UTF-8, others latin-1), so a token must be visible ASCII: the bytes are then the
    same whatever the client does.
    """
    if token is None:
        return None
    if not token.strip():
        raise ValueError(
            "WIKIQA_API_TOKEN is set but empty: set a token, or unset it to serve without one"
        )
    if not all(0x21 <= ord(ch) <= 0x7E for ch in token):
        raise ValueError(
            "WIKIQA_API_TOKEN must be visible ASCII (no spaces, no non-ASCII characters), "
            "so every client sends the same bytes"
        )
    return token


def authorized(headers: dict[bytes, bytes], token: str | None) -> bool:
    """No token configured, or a matching bearer token: the header's raw bytes against the
    token's bytes, in constant time. An empty token matches nothing."""
    if token is None:
        return True
    if not token:
        return False
    scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
    return scheme.lower() == b"bearer" and secrets.compare_digest(given, token.encode())


class RateLimiter:
    """A token bucket per client: `rate` requests a second, `burst` at once; `rate` 0 is no
    limit. Past `max_clients` known clients the least recently seen is forgotten (it starts
    again with a full bucket), so a spray of addresses cannot grow the table without bound."""

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate * BURST_SECONDS)
        self.max_clients = max_clients
        self.clock = clock
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key: (tokens, when)

    def wait(self, key: str) -> float:
        """0 when `key` may go ahead now (and its request is counted), else the seconds until
        it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens, then = self.buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate
        self.buckets[key] = (tokens - 1.0 if not wait else tokens, now)  # most recent last
        while len(self.buckets) > self.max_clients:  # the least recently seen goes first
            self.buckets.popitem(last=False)
        return wait


def client_key(scope: Scope, holder: bool, token: str | None) -> str:
    """Who a request counts against: the token it presented (a digest, never the token), or the
    address it came from."""
    if holder and token is not None:
        return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    client = scope.get("client")
    return "address:" + (str(client[0]) if client else "?")


class Shield:
    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        *,
        max_body: int = MAX_BODY,
        max_in_flight: int = 64,
        body_timeout: float = 10.0,
        rate: float = 0.0,
        burst: float | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.max_in_flight = max_in_flight
        self.body_timeout = body_timeout
        self.limiter = RateLimiter(rate, burst)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        holder = authorized(headers, self.token)
        # A body the answer below does not read: the connection closes after it, so the rest of
        # that body is never waited for (and never read as the next request).
        unread = _declares_body(headers)
        wait = self.limiter.wait(client_key(scope, holder, self.token))
        if wait:
            retry = str(math.ceil(wait))
            await _reply(send, 429, "too many requests", {"retry-after": retry}, close=unread)
            return
        if scope["path"] == LIVENESS:
            if not holder:  # liveness only, from the headers alone: no slot, no app
                await _reply(send, 200, None, close=unread, content={"status": "ok"})
                return
            await self.app(scope, _no_body(receive), _closing(send) if unread else send)
            return
        if not holder:
            await _reply(
                send, 401, "missing or invalid bearer token", {"www-authenticate": "Bearer"},
                close=unread,
            )  # fmt: skip
            return
        if b"content-length" in headers and b"transfer-encoding" in headers:
            await _reply(send, 400, "Content-Length and Transfer-Encoding together are ambiguous")
            return
        length = headers.get(b"content-length", b"0")
        if not length.isdigit():
            await _reply(send, 400, "Content-Length must be a number")
            return
        if int(length) > self.max_body:
            await _reply(send, 413, f"body over {self.max_body} bytes")
            return
        if self.in_flight >= self.max_in_flight:
            await _reply(
                send, 503, "server busy, retry shortly", {"retry-after": "1"}, close=unread
            )
            return
        self.in_flight += 1
        try:
            body = await self._read_body(receive, send)
            if body is not None:
                await self.app(scope, _replay(body, receive), send)
        finally:
            self.in_flight -= 1

    async def _read_body(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None after answering 413 / 408 (the app is then never called)."""
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                await _reply(send, 408, f"body not received within {self.body_timeout:g} s")
                return None
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _reply(send, 413, f"body over {self.max_body} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _declares_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the request says a body follows (chunked, or a length other than zero)."""
    length = headers.get(b"content-length", b"0")
    return b"transfer-encoding" in headers or length.strip(b"0") != b""


def _no_body(receive: Receive) -> Receive:
    """A receive that gives the app an empty body at once (whatever the client declared)."""
    return _replay(b"", receive)


def _closing(send: Send) -> Send:
    """`send`, adding `connection: close` to the response: its request's body is left unread."""

    async def closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return closing


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay


async def _reply(
    send: Send,
    status: int,
    detail: str | None,
    headers: dict[str, str] | None = None,
    *,
    close: bool = False,
    content: dict[str, Any] | None = None,
) -> None:
    """A JSON answer (`{"detail": detail}`, or `content`), closing the connection after it for
    the refusals whose body is never read (and whenever `close` says one was declared)."""
    body = json.dumps(content if content is not None else {"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if close or status in (400, 408, 413):
        raw.append((b"connection", b"close"))  # the rest of that body is never read
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers take too long."""

    header_timeout = 10.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.cycle is None or self.cycle.response_complete:  # no request under way
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # headers complete: from here the body timeout and the app rule

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request's headers are on the clock too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
