# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's module_utils, imported when a filter first uses them (runs on the controller).

Ansible loads every filter file of a collection to find one filter of it, in each worker process
it forks for a task, and compiles collection sources without a bytecode cache. A filter file that
imported its module_utils at load time cost about 0.14 s of CPU per host and task whose template
named any gpufabric.rollout filter (measured on the lab, ansible-core 2.19). A filter file names
its module_utils with ``module_utils("stage.name")``; the first attribute read imports that module.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

_PACKAGE = "ansible_collections.gpufabric.rollout.plugins.module_utils"


class _LazyModule:
    """Stands in for ``module_utils/<name>.py`` until an attribute of it is read."""

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def _lazy_module(self) -> ModuleType:
        return importlib.import_module(f"{_PACKAGE}.{self._lazy_name}")

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._lazy_module(), attr)

    def __repr__(self) -> str:
        return f"<module_utils {self._lazy_name} (imported on first use)>"


def module_utils(name: str) -> Any:
    """``module_utils/<name>.py`` of this collection, imported on its first attribute read."""
    return _LazyModule(name)


def resolve(dotted: str) -> Any:
    """``"stage.module.Attribute"`` of this collection's module_utils (imports the module if needed)."""
    module, _sep, attr = dotted.rpartition(".")
    return getattr(module_utils(module), attr)
