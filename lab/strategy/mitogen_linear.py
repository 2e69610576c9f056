# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's Mitogen strategy: Mitogen's ``mitogen_linear``, with the module scan's compiles kept.

Before Mitogen runs a module it has not run yet in this playbook run, its controller process lists
the ``ansible.module_utils`` files the module needs (``ansible_mitogen.module_finder.scan``): it
compiles the module and every file it reaches, and reads their imports. It keeps the list per
module, but not the compiled files, so each new module compiles ``basic.py`` and the thirty-odd
files behind it again, on the path of the task that waits for the list. Scanning 16 of the
collection's modules in one process took 1.0 CPU-s this way and 0.1-0.2 CPU-s with the compiles
kept (mitogen 0.3.54); a rerun of site.yml runs about 25 different modules.

This strategy is ``mitogen_linear`` with ``compile`` in that module replaced by one that returns
the code object it compiled before for the same source, name and mode (code objects are
immutable, so sharing one changes nothing). What Mitogen sends and runs is the same.

lab/common.sh (``lab_connection_env``) points ANSIBLE_STRATEGY_PLUGINS here when the lab's transport
is ``mitogen``; outside the lab scripts, Ansible finds Mitogen's own strategy as its documentation
says. The mitogen version is pinned in requirements.txt; tests/unit/lab/test_mitogen_strategy.py
fails when a new version no longer compiles through the name replaced here.
"""

from __future__ import annotations

import functools

import ansible_mitogen.loaders
import ansible_mitogen.module_finder
import ansible_mitogen.strategy

_builtin_compile = compile


@functools.lru_cache(maxsize=None)
def compile_once(source, filename, mode):
    """``compile(source, filename, mode)``, once per distinct argument triple in this process."""
    return _builtin_compile(source, filename, mode)


# The module-level name shadows the builtin for ansible_mitogen.module_finder only.
ansible_mitogen.module_finder.compile = compile_once

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):
    """Mitogen's linear strategy (ansible_mitogen/plugins/strategy/mitogen_linear.py)."""
