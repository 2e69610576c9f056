# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one publish path of the cluster roles: which objects a component owns, which of the
objects found in the cluster left the plan, and what listing and deleting them needs.

Pure and typed (`default_instance` reads whether a path is a directory). Every object the plan
makes carries three labels: ``app.kubernetes.io/managed-by: gpufabric.rollout``,
``gpufabric.io/component: <role part>`` and ``gpufabric.io/instance: <gpufabric_instance>``, the
deployment (one inventory) that made it (`own()` sets them). A role
applies its part of the plan, then lists the kinds it can ever create (its *prune kinds*, in the
shape ``{api_group, version, resources}``, with ``namespace`` to list a namespaced kind in that
namespace only instead of in all of them) with the label selector of `selector()`, and deletes
what `stale()` names: objects it made earlier that this plan no longer has (a rail removed, an
IPAM kind switched, a driver group gone). Objects without the labels are never touched, and
neither are those of another instance: two inventories publishing to one cluster never prune each
other's objects.
`claims_in_use()` names the Pods that still use claims about to be pruned.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import k8s_labels as _k8s_labels

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpufabric.rollout"
COMPONENT_KEY = "gpufabric.io/component"
INSTANCE_KEY = "gpufabric.io/instance"


class PublishError(ValueError):
    """A prune kind or an object is malformed (the message names it)."""


def check_instance(instance: Any) -> str:
    """`instance` when it is a usable label value, else PublishError naming gpufabric_instance."""
    problem = _k8s_labels.instance_problem(instance)
    if problem:
        raise PublishError(problem)
    return instance


def default_instance(inventory_sources: Any, awx_inventory_id: Any = None) -> str:
    """The default gpufabric_instance: ``awx-inventory-<id>`` in an AWX job (AWX hands every job the
    same inventory path), else the name of the inventory's directory (the directory given with
    ``-i``, or the one that holds the inventory file given), lowercased, anything but letters,
    digits, '-', '_' and '.' replaced by '-', at most 63 characters. "" when there is none."""
    if awx_inventory_id not in (None, ""):
        return f"awx-inventory-{awx_inventory_id}"
    sources = [inventory_sources] if isinstance(inventory_sources, str) else list(inventory_sources or [])
    if not sources or not sources[0]:
        return ""
    path = os.path.normpath(os.path.abspath(str(sources[0])))
    name = os.path.basename(path if os.path.isdir(path) else os.path.dirname(path))
    name = re.sub(r"[^a-z0-9_.-]+", "-", name.lower())
    ends = r"^[^a-z0-9]+|[^a-z0-9]+$"
    return re.sub(ends, "", re.sub(ends, "", name)[:63])


def own(objects: Iterable[Mapping[str, Any]], component: str, instance: str) -> List[Dict[str, Any]]:
    """Copies of `objects` labelled as made by this collection for `component` of `instance`."""
    if not component:
        raise PublishError("a component name is required to label objects")
    check_instance(instance)
    out = []
    for obj in objects or []:
        item = copy.deepcopy(dict(obj))
        meta = item.setdefault("metadata", {})
        labels = dict(meta.get("labels") or {})
        labels[MANAGED_BY_KEY] = MANAGED_BY
        labels[COMPONENT_KEY] = component
        labels[INSTANCE_KEY] = instance
        meta["labels"] = labels
        out.append(item)
    return out


def selector(component: str, instance: str) -> List[str]:
    """kubernetes.core label_selectors that find what `component` of `instance` made."""
    if not component:
        raise PublishError("a component name is required to select its objects")
    check_instance(instance)
    return [f"{MANAGED_BY_KEY}={MANAGED_BY}", f"{COMPONENT_KEY}={component}", f"{INSTANCE_KEY}={instance}"]


def _key(obj: Mapping[str, Any]) -> Tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def stale(
    found: Iterable[Mapping[str, Any]], planned: Iterable[Mapping[str, Any]], instance: str
) -> List[Dict[str, str]]:
    """The objects in `found` (k8s_info resources) that `planned` does not have, sorted, as
    ``{api_version, kind, namespace, name}``. Objects being deleted are left to finish; an object
    that does not carry this collection's labels for `instance` is never stale (the listing selects
    on them; this holds even for a listing that did not)."""
    check_instance(instance)
    keep = {_key(o) for o in planned or []}
    out = []
    for obj in found or []:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(MANAGED_BY_KEY) != MANAGED_BY or labels.get(INSTANCE_KEY) != instance:
            continue
        if meta.get("deletionTimestamp") or _key(obj) in keep:
            continue
        out.append(
            {
                "api_version": str(obj.get("apiVersion") or ""),
                "kind": str(obj.get("kind") or ""),
                "namespace": str(meta.get("namespace") or ""),
                "name": str(meta.get("name") or ""),
            }
        )
    return sorted(out, key=lambda o: (o["kind"], o["namespace"], o["name"]))


def _check_kind(index: int, kind: Any) -> Mapping[str, Any]:
    if not isinstance(kind, Mapping) or not kind.get("version") or not kind.get("resources"):
        raise PublishError(f"prune kinds[{index}] needs version and resources (api_group for custom kinds): {kind!r}")
    return kind


def prune_queries(kinds: Iterable[Mapping[str, Any]]) -> List[Dict[str, str]]:
    """One k8s_info query per resource of the prune kinds: ``{api_version, kind}`` (kind is the
    plural resource name, which kubernetes.core resolves), with ``namespace`` when the kind is
    listed in one namespace only."""
    out = []
    for index, kind in enumerate(kinds or []):
        kind = _check_kind(index, kind)
        group = kind.get("api_group") or ""
        api_version = f"{group}/{kind['version']}" if group else str(kind["version"])
        where = {"namespace": str(kind["namespace"])} if kind.get("namespace") else {}
        out.extend({"api_version": api_version, "kind": str(res), **where} for res in kind["resources"])
    return out


def prune_rules(kinds: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The RBAC-shaped rules (gpufabric.rollout.k8s_access) that pruning needs: list every prune
    kind in all namespaces (or in its ``namespace``), delete it."""
    rules = []
    for index, kind in enumerate(kinds or []):
        kind = _check_kind(index, kind)
        rule: Dict[str, Any] = {
            "api_group": kind.get("api_group") or "",
            "resources": list(kind["resources"]),
            "verbs": ["list", "delete"],
        }
        if kind.get("namespace"):
            rule["namespace"] = str(kind["namespace"])
        rules.append(rule)
    return rules


def claims_in_use(pods: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]) -> List[str]:
    """``namespace/claim (Pod namespace/name, ...)`` for each of `claims` (``stale()`` entries; other
    kinds are ignored) that a Pod in `pods` (k8s_info resources) mounts and that has not finished,
    sorted. Such a claim is never pruned: the API server would only mark it for deletion (the
    kubernetes.io/pvc-protection finalizer keeps it until no Pod uses it), and a Pod that restarts
    later would find its volume gone."""
    users: Dict[Tuple[str, str], List[str]] = {}
    for pod in pods or []:
        meta = pod.get("metadata") or {}
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        namespace = str(meta.get("namespace") or "")
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                users.setdefault((namespace, str(claim)), []).append(f"{namespace}/{meta.get('name')}")
    out = []
    for claim in claims or []:
        key = (str(claim.get("namespace") or ""), str(claim.get("name") or ""))
        if claim.get("kind") == "PersistentVolumeClaim" and key in users:
            out.append(f"{key[0]}/{key[1]} (Pod {', '.join(sorted(set(users[key])))})")
    return sorted(out)
