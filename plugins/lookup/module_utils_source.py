# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The source text of this collection's module_utils files, found through Python's import system."""

from __future__ import annotations

DOCUMENTATION = r"""
name: module_utils_source
author:
  - gpufabric.rollout contributors (@gpufabric)
short_description: The source text of this collection's module_utils files
description:
  - Returns the text of each named file of this collection's C(plugins/module_utils), found where
    Python imports the collection from (a checkout, an installed collection, an execution
    environment), so that a role can install code the modules share without knowing where the
    collection lies on disk.
  - The roce role installs its boot-time QoS engine with it.
  - Only module_utils files of this collection can be named; a name that leaves that folder or
    names no such file is an error.
options:
  _terms:
    description: Paths relative to C(plugins/module_utils), such as C(apply/qos_engine.py).
    required: true
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Show the QoS engine's source
  ansible.builtin.debug:
    msg: "{{ lookup('gpufabric.rollout.module_utils_source', 'apply/qos_engine.py') }}"
"""

RETURN = r"""
_raw:
  description: The text of each file, in the order named.
  type: list
  elements: str
"""

import importlib.util
import os
import re

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

PACKAGE = "ansible_collections.gpufabric.rollout.plugins.module_utils"
_NAME = re.compile(r"(?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*\.py", re.ASCII)


def module_utils_dir() -> str:
    """The folder Python imports this collection's module_utils from."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise AnsibleError(f"module_utils_source: {PACKAGE} cannot be imported")
    return next(iter(spec.submodule_search_locations))


def source(name: str) -> str:
    """The text of module_utils/<name>; AnsibleError for a name outside that folder or no such file."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise AnsibleError(
            f"module_utils_source: {name!r} is not a module_utils file name (a relative path such as "
            "apply/qos_engine.py: lower-case folders and a .py file, no '..')"
        )
    path = os.path.join(module_utils_dir(), *name.split("/"))
    if not os.path.isfile(path):
        raise AnsibleError(f"module_utils_source: this collection has no module_utils file {name}")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [source(term) for term in terms]
