# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/_cluster_plan.py (cluster networking planner)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _cluster_objects, _cluster_plan, _cluster_report
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


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


@filter_errors(_cluster_plan.ClusterPlanError, prefix="cluster plan refused: ")
def cluster_plan(intent, nodes, cluster_cidrs=None, fabric=None, nccl_version=None, components=None):
    return _cluster_plan.plan_cluster(intent, nodes, cluster_cidrs, fabric, nccl_version, components)


def cluster_report(plan):
    return _cluster_report.report_text(plan)


@filter_errors(_cluster_plan.ClusterPlanError)
def k8s_render_files(objects, prefix=""):
    """[{file, object}] with one stable file name per object, for render mode (kustomization resources)."""
    return _cluster_objects.render_files(objects, prefix)


class FilterModule:
    def filters(self):
        return {
            "cluster_nodes": cluster_nodes,
            "cluster_plan": cluster_plan,
            "cluster_report": cluster_report,
            "k8s_render_files": k8s_render_files,
        }
