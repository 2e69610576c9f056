# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's callback: make each task's worker process cheaper by loading once in the controller what
every worker loads.

It is lab tuning, not part of the collection: it leans on how ansible-core forks workers and keeps
its loaders, so it is tested only on the cores the lab runs.
lab/common.sh (lab_connection_env) enables it for the lab's runs and the molecule scenarios.

Ansible forks a worker process from the controller for every task on every host. A worker starts
with the controller's memory, and whatever it loads itself is lost when it exits:
- A worker that runs a collection's module or action imports that collection's package, which
  parses its meta/runtime.yml. Mitogen's strategy imports every visible collection this way before
  each collection module it runs (community.general's runtime.yml alone takes milliseconds to
  parse). Importing them once in the controller, before the first worker forks, lets every worker
  inherit them.
- A worker that compiles a template looks up the filters and tests it names. The first lookup of an
  ansible.builtin one loads every builtin filter (or test) file and wraps each plugin; a collection's
  one executes the file that holds it. The controller seldom needs either, so every worker did this
  again and dropped it on exit. Loading the builtin plugins and importing every collection's filter
  and test files once in the controller makes each lookup one in what the worker inherited.
- A worker's garbage collector walks every object it inherited (the controller's whole heap) each
  time it runs a full collection, and touching those pages copies them. Freezing the inherited
  objects in the child (gc.freeze right after the fork) keeps the worker's collections to what the
  worker itself allocates. The controller's own memory and collections are left as they are.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: warm_workers
type: aggregate
short_description: Load collections once in the controller and spare workers a walk of inherited memory
description:
  - Imports the package of every collection Ansible can see once, in the controller, when the
    playbook starts, so that the worker process forked for each task inherits them instead of
    importing them again.
  - Loads the builtin filter and test plugins and imports the filter and test plugin files of those
    collections the same way, so that a worker does not load them again to compile a template.
  - Registers a fork hook so that each worker freezes the objects it inherited from the controller
    (Python's gc.freeze). Its garbage collections then skip them.
  - It changes no task, result or output; it only makes each task's worker cheaper. The lab
    enables it (lab/common.sh); the collection does not ship it.
requirements:
  - lab/callback in ANSIBLE_CALLBACK_PLUGINS and warm_workers in ANSIBLE_CALLBACKS_ENABLED
"""

import gc
import importlib
import os
import pkgutil

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader

_FORK_HOOK = {"registered": False}


def collection_packages():
    """The package name of every collection on the configured collections path (COLLECTIONS_PATHS).

    Read from the directories themselves: ansible-core's own collection listing also reports its
    internal collections, and 2.21 warns that it cannot tell their versions."""
    names = []
    for root in C.COLLECTIONS_PATHS:
        base = os.path.join(os.path.expanduser(root), "ansible_collections")
        for namespace in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            for name in sorted(os.listdir(os.path.join(base, namespace))):
                if os.path.isdir(os.path.join(base, namespace, name)) and name.isidentifier():
                    names.append(f"ansible_collections.{namespace}.{name}")
    return sorted(set(names))


def jinja_plugin_modules(package: str) -> list:
    """The module names of a collection package's filter and test plugin files (imports the package)."""
    names = []
    for kind in ("filter", "test"):
        try:
            plugins = importlib.import_module(f"{package}.plugins.{kind}")
        except ImportError:  # a collection without plugins of that kind
            continue
        names.extend(f"{plugins.__name__}.{info.name}" for info in pkgutil.iter_modules(plugins.__path__))
    return sorted(names)


def register_fork_hook():
    """From now on, every process forked from this one freezes what it inherited (once per process)."""
    if not _FORK_HOOK["registered"]:
        os.register_at_fork(after_in_child=gc.freeze)
        _FORK_HOOK["registered"] = True


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "warm_workers"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        # The builtin filters and tests: the loaders keep them once loaded (public API: all()).
        builtin = len(list(filter_loader.all())) + len(list(test_loader.all()))
        packages, plugins, failed = 0, 0, []
        for package in collection_packages():
            try:
                importlib.import_module(package)
                modules = jinja_plugin_modules(package)
            except Exception as exc:  # a broken collection fails where a task uses it, as without this callback
                failed.append(f"{package} ({exc})")
                continue
            packages += 1
            # Ansible finds a filter or test file's module in sys.modules and does not execute it again.
            for module in modules:
                try:
                    importlib.import_module(module)
                    plugins += 1
                except Exception as exc:  # as above: the task that uses it reports it
                    failed.append(f"{module} ({exc})")
        register_fork_hook()
        self._display.vvv(
            f"warm_workers: loaded {builtin} builtin filters and tests, and imported {packages} collection "
            f"packages and {plugins} of their filter and test plugin files in the controller"
        )
        if failed:
            self._display.vvv("warm_workers: left to the workers: " + ", ".join(failed))
