"""Validation of rendered objects: core kinds with kubernetes-validate, custom resources against the
upstream CRD schemas of LAB_CRDS_DIR, else of the shared schemas beside the checkout, when given
(test_upstream_crds.py fails under CI=true when they are not).

The CRD check uses jsonschema over spec.versions[].schema.openAPIV3Schema; the Kubernetes extensions
(x-kubernetes-*) are ignored by jsonschema, as are CEL rules (x-kubernetes-validations), so a few
server-side rules are not exercised here; the lab cluster's kube-apiserver enforces them when the
objects are applied.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

import jsonschema
import yaml
from kubernetes_support import validate_core
from upstream_crds import UPSTREAM_CRDS

REPO = Path(__file__).resolve().parents[3]
CRDS_DIR = UPSTREAM_CRDS
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crd_schemas() -> Dict[Tuple[str, str], Dict[str, Any]]:
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    if not CRDS_DIR.is_dir():
        return out
    for path in sorted(CRDS_DIR.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=YAML_LOADER)  # a safe loader
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            out[("{}/{}".format(group, version["name"]), kind)] = version["schema"]["openAPIV3Schema"]
    return out


_SCHEMAS = crd_schemas()


def pruned_fields(value: Any, schema: Dict[str, Any], path: str = "") -> list:
    """Fields a structural-schema API server would silently drop (not declared in the schema)."""
    out = []
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties")
        if props is None or schema.get("x-kubernetes-preserve-unknown-fields"):
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for k, v in value.items():
                    out += pruned_fields(v, extra, f"{path}.{k}")
            return out
        for k, v in value.items():
            if path == "" and k in ("apiVersion", "kind", "metadata"):
                continue
            if k not in props:
                out.append(f"{path}.{k}")
            else:
                out += pruned_fields(v, props[k], f"{path}.{k}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            out += pruned_fields(v, schema["items"], "%s[%d]" % (path, i))
    return out


def validate(obj: Dict[str, Any]) -> str:
    """Validate one object; return which validator checked it ('core', 'crd', or 'crd-unavailable')."""
    key = (obj["apiVersion"], obj["kind"])
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    if "." not in group:
        validate_core(obj)
        return "core"
    if not _SCHEMAS:
        return "crd-unavailable"
    assert key in _SCHEMAS, f"no CRD schema for {key[0]} {key[1]} in {CRDS_DIR}"
    jsonschema.Draft7Validator(_SCHEMAS[key]).validate(obj)
    dropped = pruned_fields(obj, _SCHEMAS[key])
    assert not dropped, "{}/{}: fields not in the CRD schema (the API server would prune them): {}".format(
        obj["kind"], obj["metadata"]["name"], dropped
    )
    return "crd"
