# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pruning inside the apply call (the ``k8s_apply`` module's ``prune_kinds``): list each prune kind by
the component's owner labels with the apply's client, and delete what this instance made earlier that
the plan no longer has (``k8s_publish.stale``).

Before, each role listed every prune kind with one ``kubernetes.core.k8s_info`` call per kind: a
module process, a client and the API server's discovery for each, on every run. Now it is one pass
with the client the apply already holds, and a run with nothing to prune writes nothing.

A kind the API server does not serve (its CRD not installed) has nothing to prune, as before. Every
request goes through ``k8s_retry.call`` (429, 5xx, an optimistic-lock 409 and a lost connection
retried within the bound). An object already gone when it is deleted is not counted as pruned.
In check mode nothing is deleted; the objects a real run would delete are named.

Pure Python (3.8), no Ansible imports; ``client`` is a kubernetes DynamicClient (or a stand-in with
``resources.get``, ``get`` and ``delete``).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry


def _plain(obj: Any) -> Dict[str, Any]:
    data = obj.to_dict() if hasattr(obj, "to_dict") else obj
    return json.loads(json.dumps(data, default=str))


def ref(entry: Mapping[str, str]) -> str:
    """Kind/namespace/name of a ``stale()`` entry, as k8s_apply names objects."""
    return f"{entry['kind']}/{entry['namespace']}/{entry['name']}"


def prune(
    client: Any,
    kinds: Sequence[Mapping[str, Any]],
    planned: Sequence[Mapping[str, Any]],
    component: str,
    instance: str,
    dry_run: bool,
    timeout: float,
    call: Callable[..., Any] = _k8s_retry.call,
) -> Dict[str, Any]:
    """{pruned: [Kind/namespace/name], found: [listed objects that were pruned], errors: [text]}.

    A listing that fails stops the prune (nothing is deleted on a partial view); a delete that fails is
    named and the others go on."""
    queries = _k8s_publish.prune_queries(kinds)
    labels = ",".join(_k8s_publish.selector(component, instance))
    served: Dict[Tuple[str, str], Any] = {}
    found: List[Dict[str, Any]] = []
    for query in queries:
        what = f"{query['kind']}.{query['api_version']}"
        try:
            resource = call(
                lambda q=query: client.resources.get(api_version=q["api_version"], name=q["kind"]),
                f"{what} (discovery)",
                timeout,
            )
        except Exception as exc:
            if _k8s_retry.not_served(exc):
                continue
            raise
        namespace = query.get("namespace") if getattr(resource, "namespaced", False) else None
        listed = call(
            lambda r=resource, ns=namespace: client.get(r, namespace=ns, label_selector=labels),
            f"listing {what}{(' in ' + namespace) if namespace else ''}",
            timeout,
        )
        for item in _plain(listed).get("items") or []:
            # A list's items do not always repeat the list's apiVersion and kind.
            item.setdefault("apiVersion", query["api_version"])
            item.setdefault("kind", getattr(resource, "kind", ""))
            served[(item["apiVersion"], item["kind"])] = resource
            found.append(item)
    stale = _k8s_publish.stale(found, planned, instance)
    out: Dict[str, Any] = {"pruned": [], "found": [], "errors": []}
    by_ref = {ref(_entry(o)): o for o in found}
    for entry in stale:
        what = ref(entry)
        resource = served[(entry["api_version"], entry["kind"])]
        if not dry_run:
            try:
                call(
                    lambda r=resource, e=entry: client.delete(r, name=e["name"], namespace=e["namespace"] or None),
                    f"deleting {what}",
                    timeout,
                )
            except Exception as exc:
                if _k8s_retry.status_of(exc) == 404:
                    continue
                out["errors"].append(f"{what}: {' '.join(str(getattr(exc, 'body', None) or exc).split())[:400]}")
                continue
        out["pruned"].append(what)
        out["found"].append(by_ref[what])
    return out


def _entry(obj: Mapping[str, Any]) -> Dict[str, str]:
    meta = obj.get("metadata") or {}
    return {
        "kind": str(obj.get("kind") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
    }


def failure_message(errors: Sequence[str], component: str) -> str:
    """The failure naming each object that left the plan and could not be deleted, or ''."""
    if not errors:
        return ""
    return f"Could not delete {len(errors)} object(s) of {component} that left the plan: " + "; ".join(errors)
