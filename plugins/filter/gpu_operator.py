# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the gpu_operator role over plugins/module_utils/plan/gpu_operator.py (readiness, drift)."""

from __future__ import annotations


def _first(result):
    """The object of a kubernetes.core.k8s_info result (or an object given directly); None when absent."""
    if isinstance(result, dict) and "resources" in result:
        return (result.get("resources") or [None])[0]
    return result or None


def gpu_operator_not_ready(cluster_policy, daemonsets=None, drivers=None, name=None):
    """One line per component, DaemonSet or NVIDIADriver that is not ready; [] when all are.
    ``name``: Kind/name of the operator's custom resource (the GPUCluster in dra mode)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator

    items = (daemonsets or {}).get("resources") if isinstance(daemonsets, dict) else daemonsets
    found = [_first(r) for r in ((drivers or {}).get("results") or [])] if isinstance(drivers, dict) else drivers
    named = {"name": name} if name else {}
    return _plan_gpu_operator.not_ready(_first(cluster_policy), items or [], [d for d in found or [] if d], **named)


def gpu_operator_spec_drift(cluster_policy, expect, name=None):
    """The planned fields the live ClusterPolicy (or ``name``: Kind/name, the GPUCluster in dra mode)
    lacks, one line each; [] when it matches."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator

    named = {"name": name} if name else {}
    return _plan_gpu_operator.spec_drift(_first(cluster_policy), expect or {}, **named)


class FilterModule:
    def filters(self):
        return {"gpu_operator_not_ready": gpu_operator_not_ready, "gpu_operator_spec_drift": gpu_operator_spec_drift}
