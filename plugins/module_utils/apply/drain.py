# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What keeps a node's drain from finishing: the Pods still on the node and what holds each one.

A drain (``kubectl drain``, kubernetes.core.k8s_drain) evicts every Pod of the node through the
eviction API, which refuses (429) while a PodDisruptionBudget covering the Pod allows no more
disruptions; DaemonSet Pods are left (their controller would put them back), and so are Pods that
have already finished. When the drain gives up, ``blockers`` names each Pod it still waits for and
why: the budgets that cover it and how many disruptions they allow, a Pod still terminating, a Pod
without a controller or with emptyDir data that the drain options refuse to delete.

The label selector semantics (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist)
follow k8s.io/apimachinery pkg/apis/meta/v1 LabelSelector; an empty selector of a policy/v1 budget
selects every Pod of its namespace (k8s.io/api policy/v1 PodDisruptionBudgetSpec).

Pure Python, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

DONE_PHASES = ("Succeeded", "Failed")


def selector_matches(selector: Optional[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Whether a LabelSelector selects an object with ``labels``; an empty selector selects everything."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key")
        operator = expression.get("operator")
        values = list(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _owner_kinds(pod: Mapping[str, Any]) -> List[str]:
    return [
        str(ref.get("kind"))
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or []
        if ref.get("controller")
    ]


def waits_for(pod: Mapping[str, Any], node: str) -> bool:
    """A Pod the drain of ``node`` must see gone: on the node, not finished, not a DaemonSet's or a mirror Pod."""
    meta = pod.get("metadata") or {}
    if (pod.get("spec") or {}).get("nodeName") != node:
        return False
    if (pod.get("status") or {}).get("phase") in DONE_PHASES:
        return False
    if "DaemonSet" in _owner_kinds(pod):
        return False
    return "kubernetes.io/config.mirror" not in (meta.get("annotations") or {})


def _budget_text(pdb: Mapping[str, Any]) -> str:
    meta = pdb.get("metadata") or {}
    status = pdb.get("status") or {}
    return "PodDisruptionBudget {}/{} allows {} disruption(s) (healthy {} of {} wanted)".format(
        meta.get("namespace"),
        meta.get("name"),
        status.get("disruptionsAllowed", 0),
        status.get("currentHealthy", "?"),
        status.get("desiredHealthy", "?"),
    )


def blockers(
    pods: Sequence[Mapping[str, Any]],
    pdbs: Sequence[Mapping[str, Any]],
    node: str,
    force: bool = False,
    delete_emptydir_data: bool = False,
) -> List[str]:
    """One line per Pod the drain of ``node`` still waits for, naming what holds it."""
    out: List[str] = []
    for pod in sorted(
        pods, key=lambda p: ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", ""))
    ):
        if not waits_for(pod, node):
            continue
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace")
        labels = meta.get("labels") or {}
        reasons: List[str] = []
        held = False
        for pdb in pdbs:
            pdb_meta = pdb.get("metadata") or {}
            if pdb_meta.get("namespace") != namespace:
                continue
            if selector_matches((pdb.get("spec") or {}).get("selector"), labels):
                reasons.append(_budget_text(pdb))
                held = held or int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) <= 0
        if meta.get("deletionTimestamp"):
            grace = meta.get("deletionGracePeriodSeconds")
            reasons.append("terminating" + (f" (grace period {grace}s)" if grace is not None else ""))
        if not _owner_kinds(pod) and not force:
            reasons.append("no controller: the drain deletes such a Pod only with force")
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if any("emptyDir" in volume for volume in volumes) and not delete_emptydir_data:
            reasons.append("emptyDir data: the drain deletes it only with delete_emptydir_data")
        held = held or len(reasons) > sum(1 for r in reasons if r.startswith("PodDisruptionBudget "))
        if not held:
            # Its budgets allow the eviction: the drain stopped at another Pod's refused eviction
            # before this one (kubernetes.core.k8s_drain evicts one Pod after another).
            reasons.append("not evicted yet")
        phase = (pod.get("status") or {}).get("phase") or "unknown phase"
        out.append(f"{namespace}/{meta.get('name')} ({phase}): " + "; ".join(reasons))
    return out


def summary(lines: Sequence[str], limit: int = 10) -> Dict[str, Any]:
    """The blockers as one message and the list (cut at ``limit`` lines, saying how many more)."""
    shown = list(lines[:limit])
    if len(lines) > limit:
        shown.append(f"... and {len(lines) - limit} more Pod(s)")
    return {"count": len(lines), "lines": shown, "text": "; ".join(shown) if shown else "no Pod left to evict"}
