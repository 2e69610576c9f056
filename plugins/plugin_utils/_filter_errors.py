# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter plumbing shared by the collection's filter plugins (runs on the controller)."""

from __future__ import annotations

import functools
from typing import Any, Callable

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._lazy import resolve


def filter_errors(*errors: str, prefix: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the planner's documented ``errors`` reach the playbook as AnsibleFilterError with
    the same message (after ``prefix``); the filter keeps its name and signature.

    ``errors`` name module_utils exception classes as ``"_module.ClassName"``. They are looked up
    when the filter raises, so that loading the filter file imports no module_utils (_lazy)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, tuple(resolve(name) for name in errors)):
                    raise AnsibleFilterError(f"{prefix}{exc}") from exc
                raise

        return wrapper

    return decorate
