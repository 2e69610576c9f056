"""The Kubernetes support range holds together: the lab's kube-apiserver lies inside it, and the
schema check really rejects an object on either end."""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes_support import LAB, NEWEST, OLDEST, validate_core

REPO = Path(__file__).resolve().parents[2]


def minor(release: str) -> tuple:
    return tuple(int(x) for x in release.split(".")[:2])


def test_the_lab_runs_a_release_inside_the_supported_range():
    go_mod = (REPO / "lab" / "controlplane" / "kubernetes" / "go.mod").read_text()
    found = re.search(r"^\s*k8s\.io/kubernetes v(\d+\.\d+)\.\d+", go_mod, re.MULTILINE)
    assert found and found.group(1) == LAB
    assert minor(OLDEST) <= minor(LAB) <= minor(NEWEST)


@pytest.mark.parametrize("release", [OLDEST, NEWEST])
def test_each_end_of_the_range_has_its_schema_and_is_checked(release):
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, release, strict=True)
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_core(bad)


def test_an_object_one_end_does_not_serve_is_refused():
    # flowcontrol v1beta3 was served up to 1.31 and is gone from 1.32 on: the range check rejects it.
    gone = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "x"},
        "spec": {"type": "Exempt"},
    }
    kubernetes_validate.validate(gone, "1.31", strict=True)
    with pytest.raises((kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError)):
        validate_core(gone)
