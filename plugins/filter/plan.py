# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the plan role uses while it reads a node (before the node's plan exists), and the package
names the host roles share with it (the kernel headers, what the plan's package read lacks)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def plan_doca_repo(values, ansible_facts):
    """The DOCA repository URL the plan reads the index of (the same function the plan records)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_stack as _node_stack

    try:
        return _node_stack.doca_repo(values or {}, ansible_facts or {})
    except _doca.DocaError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def plan_driver_repo(values, ansible_facts):
    """The GPU driver repository the plan reads the index of when the collection installs the host driver."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_driver as _plan_gpu_driver

    return _plan_gpu_driver.cuda_repo(values or {}, ansible_facts or {})


def doca_stack_packages(_unused=None):
    """Every package name that tells the RDMA stack on a node apart (DOCA-OFED, MLNX_OFED, inbox)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca

    return _doca.stack_package_names()


def kernel_headers_package(kernel, os_family="Debian"):
    """The package with the headers of ``kernel`` on ``os_family`` (linux-headers-6.1.0-28-amd64)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

    return _packages.kernel_headers(os_family, kernel)


def packages_missing(wanted, packages_facts):
    """The specs in ``wanted`` (name, name=version, name=version*) that ansible_facts.packages, as the
    plan read it, does not satisfy (_packages.missing).

    Nothing in a run removes a package, so a stale read can only ask apt for one that is there:
    a task that changes nothing."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

    if isinstance(wanted, str):
        wanted = [wanted]
    return _packages.missing(wanted, packages_facts)


def dra_api_refusal(cluster_info):
    """The refusal of gpufabric_k8s_device_allocation: dra on this API server, or '' (k8s_cluster_info's result)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra_server as _dra_server

    if not isinstance(cluster_info, dict):
        raise AnsibleFilterError("dra_api_refusal: expects the result of kubernetes.core.k8s_cluster_info")
    server = ((cluster_info.get("version") or {}).get("server") or {}).get("kubernetes") or {}
    return _dra_server.refusal(server.get("gitVersion"), (cluster_info.get("apis") or {}).keys()) or ""


def allocation_mode_reads(_unused=None):
    """The GPU Operator custom resources whose presence tells the cluster's device allocation now:
    [{api_version, kind, name, mode}] (the ClusterPolicy and the GPUCluster the chart renders)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_change as _change

    return _change.mode_reads()


def allocation_cluster_mode(reads):
    """The cluster's device allocation now (dra, device_plugin or '' for neither), from the looped
    kubernetes.core.k8s_info result of the objects allocation_mode_reads names."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_change as _change

    if not isinstance(reads, dict) or not isinstance(reads.get("results"), list):
        raise AnsibleFilterError("allocation_cluster_mode: expects a looped kubernetes.core.k8s_info result")
    found = {}
    for result in reads["results"]:
        item = result.get("item") or {}
        found.setdefault(item.get("mode"), []).extend(result.get("resources") or [])
    return _change.cluster_mode(found.get("device_plugin"), found.get("dra")) or ""


def allocation_change_refusal(pods, planned, current, skip_namespaces=()):
    """Why this run may not move the cluster from ``current`` to ``planned`` while the Pods of
    ``pods`` (a kubernetes.core.k8s_info result) hold devices, or ''."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_change as _change

    if not isinstance(pods, dict):
        raise AnsibleFilterError("allocation_change_refusal: expects a kubernetes.core.k8s_info result of Pods")
    users = _change.device_users(pods.get("resources"), skip_namespaces or ())
    return _change.refusal(str(planned), current or None, users) or ""


class FilterModule:
    def filters(self):
        return {
            "plan_doca_repo": plan_doca_repo,
            "plan_driver_repo": plan_driver_repo,
            "doca_stack_packages": doca_stack_packages,
            "kernel_headers_package": kernel_headers_package,
            "packages_missing": packages_missing,
            "dra_api_refusal": dra_api_refusal,
            "allocation_mode_reads": allocation_mode_reads,
            "allocation_cluster_mode": allocation_cluster_mode,
            "allocation_change_refusal": allocation_change_refusal,
        }
