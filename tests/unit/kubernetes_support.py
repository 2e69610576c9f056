"""The Kubernetes releases the cluster roles support, and the check that proves a rendered core
object valid on both ends of that range (kubernetes-validate carries each release's OpenAPI schema).

The newest release in between that the lab runs for real is its kube-apiserver
(lab/controlplane/kubernetes/go.mod); tests/unit/test_kubernetes_support.py ties LAB to it."""

from __future__ import annotations

from typing import Any, Dict

import kubernetes_validate

OLDEST = "1.32"
NEWEST = "1.37"
LAB = "1.36"
SUPPORTED = (OLDEST, NEWEST)


def validate_core(obj: Dict[str, Any]) -> None:
    """Raise kubernetes_validate.ValidationError unless ``obj`` is valid on the oldest and the newest release."""
    for release in SUPPORTED:
        kubernetes_validate.validate(obj, release, strict=True)
