"""A private lab control plane for the lab cluster tests (one per test session).

It is started with lab/kube.sh in a temporary GPUFABRIC_KUBE_DIR, so it runs beside `make lab`'s
cluster and any molecule scenario's; the binaries come from lab/controlplane/build.sh (`make
controlplane-test` builds them first). Two GPU nodes are registered from the dgx-h200-8x8
snapshot (lab/cluster/nodes.py), and the CRDs installed: the upstream ones (LAB_CRDS_DIR, else the
shared schemas beside the checkout), else the lab's permissive stand-ins; a test that needs the
upstream schemas themselves takes the `crds` fixture, which skips without them (fails under
CI=true). The cluster is stopped and removed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# role_runner.py (a role run on localhost, shared with the unit tests) is one level up.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
from controlplane_support import NODES, Cluster, checked_plan, private_cluster
from upstream_crds import require


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    with private_cluster(tmp_path_factory.mktemp("kube"), tmp_path_factory.mktemp("sysroots"), NODES) as c:
        yield c


@pytest.fixture(scope="session")
def crds() -> Path:
    return require("this test")


@pytest.fixture(scope="session")
def topology(cluster) -> Dict[str, Dict[str, Any]]:
    """The collection's discovery run on each registered node's snapshot (as the roles see it)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import discover

    return {name: discover(str(cluster.sysroots / snapshot)) for name, snapshot in NODES.items()}


@pytest.fixture(scope="session")
def plan(topology) -> Dict[str, Any]:
    """The cluster plan, its NADs and NCCL ConfigMaps in the namespace gpu-workloads."""
    return checked_plan(topology, "gpu-workloads")
