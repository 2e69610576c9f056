"""Seed files: YAML documents (or `kind: List`) created when the double starts."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

import yaml

from .api import Api, Request

SEED_MANAGER = "kube-double-seed"


def _flatten(docs: Iterable[Any]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for doc in docs:
        if not doc:
            continue
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List") and "items" in doc:
            out += _flatten(doc["items"])
        elif isinstance(doc, list):
            out += _flatten(doc)
        elif isinstance(doc, dict):
            out.append(doc)
    return out


def _order(obj: Dict[str, Any]) -> int:
    """Namespaces and CRDs first, so the objects that need them can be created."""
    return {"Namespace": 0, "CustomResourceDefinition": 1}.get(obj.get("kind", ""), 2)


def load_objects(api: Api, objects: Iterable[Dict[str, Any]]) -> int:
    count = 0
    for obj in sorted(_flatten(objects), key=_order):
        rt = api.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rt is None:
            raise SystemExit("seed: unknown kind {} {}".format(obj.get("apiVersion"), obj.get("kind")))
        ns = (obj.get("metadata") or {}).get("namespace") or ("default" if rt.namespaced else "")
        status = obj.get("status")
        created = api.create(rt, ns, obj, Request(SEED_MANAGER))
        if status is not None and "status" in rt.subresources and created.get("status") != status:
            created["status"] = status
            api.update(rt, ns, created["metadata"]["name"], created, Request(SEED_MANAGER), subresource="status")
        count += 1
    return count


def load_seed_files(api: Api, paths: Iterable[str]) -> int:
    count = 0
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            count += load_objects(api, yaml.safe_load_all(fh))
    return count
