# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bounded retries of the collection's own Kubernetes API calls.

The API server answers 429 (Too Many Requests: API Priority and Fairness, or an eviction that a
budget refuses), 500-504 while it or etcd restarts, and 409 (Conflict) when an object changed
between a read and a write; a connection refused or reset is the same restart seen from the
client. Such an answer is retried with exponential backoff (honouring a Retry-After header),
within a bounded total time; anything else fails at once. When the budget is spent, RetryError
names the object and the last answer.

`transient()` reads the same from a kubernetes.core task result (its ``status`` and ``msg``),
for the ``until:`` of the roles' kubernetes.core tasks. Pure Python (3.8), no Ansible imports.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Mapping, Optional, TypeVar

T = TypeVar("T")
RETRIED_STATUS = frozenset((409, 429, 500, 502, 503, 504))
# What a client says when the connection itself failed (urllib3, the kubernetes client).
_CONNECTION_RE = re.compile(
    r"connection refused|connection reset|connection aborted|max retries exceeded|timed out|"
    r"remote end closed|temporarily unavailable|too many requests|service unavailable|"
    r"internal server error|bad gateway|gateway timeout|conflict|the object has been modified",
    re.IGNORECASE,
)
_STATUS_RE = re.compile(r"\(\s*(\d{3})\s*\)|status[\"']?\s*[:=]\s*(\d{3})|^\s*(\d{3})\b", re.IGNORECASE)


class RetryError(RuntimeError):
    """An API call that kept failing; the message names the object and the last answer."""


def status_of(exc: BaseException) -> Optional[int]:
    """The HTTP status an API client exception carries (kubernetes ApiException, the dynamic client's errors)."""
    for attr in ("status", "status_code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    return None


def field_conflict(exc: BaseException) -> bool:
    """A server-side apply refused because another field manager holds a field: a retry gets the same answer."""
    body = getattr(exc, "body", None) or ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or exc)
    return "FieldManagerConflict" in text or "Apply failed with" in text


def retryable(exc: BaseException) -> bool:
    status = status_of(exc)
    if status == 409 and field_conflict(exc):
        return False
    if status is not None:
        return status in RETRIED_STATUS
    return bool(_CONNECTION_RE.search(str(exc)))


def not_served(exc: BaseException) -> bool:
    """The kind is not in the API server's discovery (kubernetes.dynamic's ResourceNotFoundError), or its
    group/version is gone (404)."""
    return type(exc).__name__ == "ResourceNotFoundError" or status_of(exc) == 404


def _retry_after(exc: BaseException) -> Optional[float]:
    headers = getattr(exc, "headers", None) or {}
    try:
        value = headers.get("Retry-After") if hasattr(headers, "get") else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def call(
    func: Callable[[], T],
    what: str,
    max_total: float = 60.0,
    base_delay: float = 0.5,
    max_delay: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``func()``, retried while it fails with a transient answer, for at most ``max_total`` seconds."""
    start = clock()
    delay = base_delay
    attempt = 0
    while True:
        attempt += 1
        try:
            return func()
        except Exception as exc:
            if not retryable(exc):
                raise
            wait = min(max(_retry_after(exc) or delay, 0.0), max_delay)
            spent = clock() - start
            if spent + wait > max_total:
                status = status_of(exc)
                raise RetryError(
                    f"{what}: the API server kept refusing after {attempt} attempt(s) in {spent:.0f} s "
                    f"(the bound is {max_total:.0f} s); last answer: "
                    f"{'HTTP ' + str(status) + ' ' if status else ''}{str(exc).strip()[:300]}"
                ) from exc
            sleep(wait)
            delay = min(delay * 2, max_delay)


def transient(result: Mapping[str, Any]) -> bool:
    """Whether a failed kubernetes.core task result is a transient answer worth another try.

    kubernetes.core lets an API error of its discovery (a 503, a connection refused while the API
    server restarts) out of the module as an exception. ansible-core 2.19 and later then hand
    ``until`` a result with no message at all (the exception's text is added once the retries are
    over): such a result is retried, since the retries are bounded and a cause that stays still
    fails the task, with its message. Older cores give the traceback in ``module_stderr``."""
    if not isinstance(result, Mapping) or not result.get("failed"):
        return False
    text = " ".join(str(result.get(key) or "") for key in ("msg", "reason", "module_stderr"))
    if "FieldManagerConflict" in text or "Apply failed with" in text:
        return False  # another field manager holds a field: a retry gets the same answer
    status = result.get("status")
    if isinstance(status, int):
        return status in RETRIED_STATUS
    if result.get("exception") and not result.get("msg"):
        return True
    match = _STATUS_RE.search(text)
    if match:
        code = int(next(g for g in match.groups() if g))
        if 100 <= code <= 599:
            return code in RETRIED_STATUS
    return bool(_CONNECTION_RE.search(text))
