# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter plumbing shared by the collection's filter plugins (runs on the controller)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Tuple, Type

from ansible.errors import AnsibleFilterError


def filter_errors(
    errors: Callable[[], Tuple[Type[BaseException], ...]], prefix: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the planner's documented errors reach the playbook as AnsibleFilterError with the
    same message (after ``prefix``); the filter keeps its name and signature.

    ``errors`` returns the module_utils exception classes. It is called only when the filter raises:
    the filter files import their module_utils inside the functions that use them, because
    ansible-core loads every filter file of the collection to find one of its filters (see
    docs/performance.md)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, errors()):
                    raise AnsibleFilterError(f"{prefix}{exc}") from exc
                raise

        return wrapper

    return decorate
