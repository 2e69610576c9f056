# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter plumbing shared by the collection's filter plugins (runs on the controller)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Type

from ansible.errors import AnsibleFilterError


def filter_errors(*errors: Type[BaseException], prefix: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the planner's documented ``errors`` reach the playbook as AnsibleFilterError with
    the same message (after ``prefix``); the filter keeps its name and signature."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except errors as exc:
                raise AnsibleFilterError(f"{prefix}{exc}") from exc

        return wrapper

    return decorate
