# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the plan role uses while it reads a node (before the node's plan exists)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _doca, _plan_gpu_driver, _plan_node


def plan_doca_repo(values, ansible_facts):
    """The DOCA repository URL the plan reads the index of (the same function the plan records)."""
    try:
        return _plan_node.doca_repo(values or {}, ansible_facts or {})
    except _doca.DocaError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def plan_driver_repo(values, ansible_facts):
    """The GPU driver repository the plan reads the index of when the collection installs the host driver."""
    return _plan_gpu_driver.cuda_repo(values or {}, ansible_facts or {})


def doca_stack_packages(_unused=None):
    """Every package name that tells the RDMA stack on a node apart (DOCA-OFED, MLNX_OFED, inbox)."""
    return _doca.stack_package_names()


class FilterModule:
    def filters(self):
        return {
            "plan_doca_repo": plan_doca_repo,
            "plan_driver_repo": plan_driver_repo,
            "doca_stack_packages": doca_stack_packages,
        }
