# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retry of one Kubernetes API call on the answers that say "try again" (Python >= 3.8).

``call(fn, what)`` runs ``fn()`` and, while it raises an error whose HTTP status is 409
(Conflict), 429 (Too Many Requests) or 5xx, runs it again after an exponential backoff with
jitter (honouring a Retry-After header when the server sends one), until ``timeout`` seconds have
passed in all. Other errors are raised at once. When the time is up it raises RetryTimeout naming
``what``, the number of attempts and the last status.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Optional

RETRIABLE = frozenset([409, 429, 500, 502, 503, 504])


class RetryTimeout(Exception):
    """The call kept failing with a retriable status until its time was up."""

    def __init__(self, what: str, attempts: int, status: int, last: BaseException):
        super().__init__(f"{what}: still failing after {attempts} attempts (last HTTP status {status}: {last})")
        self.what = what
        self.attempts = attempts
        self.status = status
        self.last = last


def status_of(exc: BaseException) -> Optional[int]:
    """The HTTP status of a kubernetes client error (ApiException or DynamicApiError), else None."""
    status = getattr(exc, "status", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def retry_after(exc: BaseException) -> Optional[float]:
    """Seconds the server asked to wait (Retry-After), when it sent a number."""
    headers = getattr(exc, "headers", None) or {}
    try:
        value = headers.get("Retry-After") or headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def call(
    fn: Callable[[], Any],
    what: str,
    timeout: float = 60.0,
    base: float = 0.25,
    cap: float = 8.0,
    retriable: frozenset = RETRIABLE,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """``fn()``, retried on a retriable HTTP status for at most ``timeout`` seconds in all."""
    deadline = clock() + timeout
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            status = status_of(exc)
            if status not in retriable:
                raise
            delay = min(cap, base * (2 ** (attempt - 1)))
            delay = random.uniform(delay / 2, delay)
            asked = retry_after(exc)
            if asked is not None:
                delay = max(delay, min(asked, cap))
            left = deadline - clock()
            if left <= 0:
                raise RetryTimeout(what, attempt, status, exc) from exc
            sleep(min(delay, left))
