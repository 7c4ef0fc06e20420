"""One retry policy for every remote call (MediaWiki, model APIs), built on tenacity.

Callers turn a retryable failure into `Transient` (with the server's Retry-After, when it sent
one); anything else propagates untouched. Waits are exponential unless the server named one, and
a server asking for more than `max_wait` is taken at its word: we give up at once instead of
hammering it early.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

T = TypeVar("T")


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class Transient(Exception):
    """A failure worth retrying; `retry_after` is the server's requested wait in seconds."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class GaveUp(Exception):
    """Retries are exhausted (or the server asked for a longer wait than we allow)."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    backoff: float = 1.0
    max_wait: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def _wait(self, state: RetryCallState) -> float:
        err = state.outcome.exception() if state.outcome else None
        if isinstance(err, Transient) and err.retry_after is not None:
            return err.retry_after
        return float(min(self.backoff * 2 ** (state.attempt_number - 1), self.max_wait))

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn`, retrying `Transient` failures; raise `GaveUp` when retrying stops."""

        def once() -> T:
            try:
                return fn()
            except Transient as err:
                if err.retry_after is not None and err.retry_after > self.max_wait:
                    raise GaveUp(
                        f"{err}; server asked to wait {err.retry_after:.0f}s, "
                        f"more than max_wait={self.max_wait:.0f}s",
                        attempts=1,
                    ) from err
                raise

        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception_type(Transient),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            return retrying(once)
        except Transient as err:
            raise GaveUp(f"{err} (gave up after {self.attempts} attempts)", self.attempts) from err


# Model APIs: the SDK retries first (sdk_max_retries); this policy covers what outlasts that.
MODEL_RETRY = RetryPolicy(attempts=3, backoff=2.0, max_wait=60.0)
