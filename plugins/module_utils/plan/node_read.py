# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node check's one read of the node (the plan action, part check_node with ``read``): the
arguments of ``plan_facts`` that come from the node's checked variables, and which of its facts
are setup's and which the plan's reads.

plan_facts runs setup's collectors and the plan's reads in one module call, before the check, with
its arguments rendered from the node's variables as they stand; the check then decides. Where the
checked values differ from those (a default or template the check renders otherwise), the reads
run again with the checked values, so that the plan always reads with what the check accepted.

Pure functions, no Ansible imports.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional, Tuple

# The facts plan_facts' reads return (plugins/modules/plan_facts.py); every other fact of its
# result is setup's (and ansible-core's discovered interpreter).
READ_FACTS = ("gpufabric_topology", "gpufabric_gpudirect", "packages", "gpufabric_doca")

# plan_facts option -> (the node variable it comes from, the value when the variable is not set:
# the variable's default in its role's argument specs, which is also the module option's default).
INPUTS: Dict[str, Tuple[str, Any]] = {
    "sysroot": ("gpufabric_sysroot", "/"),
    "storage_nics": ("topology_storage_nics", []),
    "rail_nics": ("topology_rail_nics", []),
    "nvidia_smi": ("topology_nvidia_smi", "auto"),
    "method": ("gpudirect_rdma_method", "auto"),
    "cuda_version": ("gpudirect_rdma_cuda_version", ""),
}


def read_args(values: Mapping[str, Any]) -> Dict[str, Any]:
    """plan_facts' arguments from the node's variables (``values``: name -> value, checked or not)."""
    return {option: copy.deepcopy(values.get(name, default)) for option, (name, default) in INPUTS.items()}


def variable_names() -> Tuple[str, ...]:
    """The node variables plan_facts' arguments come from."""
    return tuple(name for name, _default in INPUTS.values())


def split_facts(facts: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(setup's facts, the reads' facts) of plan_facts' ``ansible_facts``."""
    setup, reads = {}, {}
    for name, value in (facts or {}).items():
        (reads if name in READ_FACTS else setup)[name] = value
    return setup, reads
