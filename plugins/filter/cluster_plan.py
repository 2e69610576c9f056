# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/_cluster_plan.py (cluster networking planner)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _cluster_plan, _k8s_access


def cluster_nodes(hostvars, hosts):
    """Map Kubernetes node name -> gpufabric_topology facts for the given inventory hosts.

    The node name is the host var `gpufabric_k8s_node_name` when set, else the inventory hostname.
    A host without topology facts is an error: the plan must see every GPU node.
    """
    nodes = {}
    missing = []
    for host in hosts or []:
        hv = hostvars[host]
        facts = (hv.get("ansible_facts") or {}).get("gpufabric_topology") or hv.get("gpufabric_topology")
        if not facts:
            missing.append(host)
            continue
        nodes[str(hv.get("gpufabric_k8s_node_name") or host)] = facts
    if missing:
        raise AnsibleFilterError(
            "no gpufabric_topology facts for {}: run gpufabric.rollout.topology_facts on the GPU nodes first".format(
                ", ".join(missing)
            )
        )
    return nodes


def cluster_plan(intent, nodes, cluster_cidrs=None, fabric=None, nccl_version=None, components=None):
    try:
        return _cluster_plan.plan_cluster(intent, nodes, cluster_cidrs, fabric, nccl_version, components)
    except _cluster_plan.ClusterPlanError as exc:
        raise AnsibleFilterError(f"cluster plan refused: {exc}") from exc


def cluster_report(plan):
    return _cluster_plan.report_text(plan)


def k8s_render_files(objects, prefix=""):
    """[{file, object}] with one stable file name per object, for render mode (kustomization resources)."""
    try:
        return _cluster_plan.render_files(objects, prefix)
    except _cluster_plan.ClusterPlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def k8s_apply_rules(objects):
    """RBAC-shaped rules (for gpufabric.rollout.k8s_access) that server-side applying `objects` needs."""
    try:
        return _k8s_access.apply_rules(objects)
    except _k8s_access.AccessRuleError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def k8s_helm_rules(namespaces):
    """RBAC-shaped rules that Helm releases in `namespaces` need (the namespace, the release records)."""
    return _k8s_access.helm_release_rules(list(namespaces or []))


class FilterModule:
    def filters(self):
        return {
            "cluster_nodes": cluster_nodes,
            "cluster_plan": cluster_plan,
            "cluster_report": cluster_report,
            "k8s_render_files": k8s_render_files,
            "k8s_apply_rules": k8s_apply_rules,
            "k8s_helm_rules": k8s_helm_rules,
        }
