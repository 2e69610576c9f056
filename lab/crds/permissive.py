"""Write the lab's permissive stand-in CRDs: one CustomResourceDefinition per kind of kinds.yml,
with the upstream group, names, scope, version and status subresource but no schema (every field
kept: x-kubernetes-preserve-unknown-fields), each named <plural>.<group>.yaml as the roles load
the upstream ones. The lab installs them when the upstream CRDs are not given, so every apply
path, Helm release and Job still runs against the real API server; schema validation then happens
only where the upstream CRDs are given (LAB_CRDS_DIR). Each carries the annotation STAND_IN so
that nobody mistakes it for the upstream CRD.

Usage: lab/crds/permissive.py OUTDIR    (prints OUTDIR)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import yaml

KINDS = Path(__file__).resolve().with_name("kinds.yml")
STAND_IN = "gpufabric.io/lab-stand-in"
STAND_IN_TEXT = "permissive: no schema, written by lab/crds/permissive.py; the upstream CRD validates"


def kinds() -> List[Dict[str, Any]]:
    return yaml.safe_load(KINDS.read_text(encoding="utf-8"))["kinds"]


def crd(entry: Dict[str, Any]) -> Dict[str, Any]:
    """The permissive CRD of one kinds.yml row."""
    plural = entry["plural"]
    version: Dict[str, Any] = {
        "name": entry["version"],
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if entry["status"]:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{entry['group']}", "annotations": {STAND_IN: STAND_IN_TEXT}},
        "spec": {
            "group": entry["group"],
            "names": {
                "kind": entry["kind"],
                "listKind": entry["kind"] + "List",
                "plural": plural,
                "singular": entry.get("singular") or entry["kind"].lower(),
            },
            "scope": entry["scope"],
            "versions": [version],
        },
    }


def write(outdir: Path) -> List[Path]:
    """Write every stand-in into outdir (created); files of other names there are left alone."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in kinds():
        body = crd(entry)
        path = outdir / f"{body['metadata']['name']}.yaml"
        text = "---\n" + yaml.safe_dump(body, sort_keys=False)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(".yaml.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        written.append(path)
    return written


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    write(Path(argv[1]))
    print(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
