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


def _hostname_label(node: Mapping[str, Any]) -> str:
    return str(((node.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/hostname") or "")


def target(
    host: str,
    mode: str,
    required: bool,
    names: Sequence[str],
    by_name: Mapping[str, Any],
    by_label: Mapping[str, Any],
    kubelet: bool,
    variable: str,
) -> Dict[str, Any]:
    """Which Node a reload or reboot of ``host`` drains, failing closed.

    ``names[0]`` is the Node name the plan uses; the others (the inventory name, its short name, the
    host's FQDN) are matched against the ``kubernetes.io/hostname`` label when no Node has that name
    (a Node registered under its FQDN, an inventory of short names). ``by_name`` and ``by_label`` are
    k8s_info results (``failed`` and ``msg`` when the API could not be read). ``kubelet``: the host
    has run a kubelet (its state directory exists), so it is a node of some cluster.

    Returns ``{in_cluster, name, node, refuse}``: ``refuse`` is a message naming the host and why
    when ``required`` (a reload or reboot is about to happen) and the host should be drained but
    cannot be: mode ``always`` or a kubelet on the host, and the Node cannot be read, is not found,
    or is ambiguous. ``mode`` ``never``: no drain (the caller drained already).
    """
    out: Dict[str, Any] = {"in_cluster": False, "name": names[0] if names else host, "node": {}, "refuse": ""}
    if mode == "never":
        return out
    must = mode == "always" or bool(kubelet)
    why = f"{variable.replace('_node_name', '_drain')} is always" if mode == "always" else "it runs a kubelet"
    wanted = list(dict.fromkeys(str(n) for n in names if n))
    problem = ""
    found: List[Mapping[str, Any]] = []
    if by_name.get("failed"):
        problem = (
            f"its Node could not be read from the cluster of gpufabric_kubeconfig ({by_name.get('msg') or 'failed'})"
        )
    elif by_name.get("resources"):
        found = list(by_name["resources"])
    elif by_label.get("failed"):
        problem = (
            f"Nodes could not be listed in the cluster of gpufabric_kubeconfig ({by_label.get('msg') or 'failed'})"
        )
    else:
        found = [n for n in by_label.get("resources") or [] if _hostname_label(n) in wanted]
        if len(found) > 1:
            problem = (
                "several Nodes carry kubernetes.io/hostname "
                + " or ".join(wanted)
                + ": "
                + ", ".join(sorted(str((n.get("metadata") or {}).get("name")) for n in found))
            )
            found = []
        elif not found:
            problem = (
                f"no Node named {wanted[0] if wanted else host!r} or labelled kubernetes.io/hostname "
                f"{' or '.join(wanted)} exists in the cluster of gpufabric_kubeconfig"
            )
    if found:
        node = found[0]
        out.update(in_cluster=True, name=str((node.get("metadata") or {}).get("name")), node=dict(node))
        return out
    if must and required:
        out["refuse"] = (
            f"{host} is not reloaded or rebooted: it must be drained first ({why}), but {problem}. Set {variable} "
            "to its Node name (or gpufabric_k8s_node_name), or gpufabric_kubeconfig to the cluster it is a Node of; "
            "the installed driver stays unloaded until then"
        )
    return out
