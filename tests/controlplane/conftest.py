"""A private lab control plane for the lab cluster tests (one per test session).

It is started with lab/kube.sh in a temporary GPUFABRIC_KUBE_DIR, so it runs beside `make lab`'s
cluster and any molecule scenario's; the binaries come from lab/controlplane/build.sh (`make
controlplane-test` builds them first). Two GPU nodes are registered from the dgx-h200-8x8
snapshot (lab/cluster/nodes.py), and the upstream CRDs in ../shared/crds are installed when the
folder exists. The cluster is stopped and removed at the end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from controlplane_support import CRDS, NODES, REPO, Cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    state = tmp_path_factory.mktemp("kube")
    build = subprocess.run(
        [str(REPO / "lab" / "controlplane" / "build.sh")], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail("the control plane binaries could not be built:\n" + build.stderr[-3000:])
    c = Cluster(state, Path(build.stdout.strip()), tmp_path_factory.mktemp("sysroots"))
    started = c.kube_sh("start", check=False)
    if started.returncode != 0:
        pytest.fail("lab/kube.sh start failed:\n" + started.stderr[-3000:])
    try:
        subprocess.run(
            [
                sys.executable,
                str(REPO / "lab" / "cluster" / "nodes.py"),
                "--kubeconfig",
                str(c.admin),
                "--sysroots",
                str(c.sysroots),
                *(f"{name}={snapshot}" for name, snapshot in NODES.items()),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        if CRDS.is_dir():
            c.kubectl("apply", "--server-side", "-f", str(CRDS))
            c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield c
    finally:
        c.kube_sh("stop", "--purge", check=False)


@pytest.fixture(scope="session")
def crds() -> Path:
    if not CRDS.is_dir():
        pytest.skip(f"the upstream CRDs are not in {CRDS} (a checkout beside shared/crds has them)")
    return CRDS


@pytest.fixture(scope="session")
def topology(cluster) -> Dict[str, Dict[str, Any]]:
    """The collection's discovery run on each registered node's snapshot (as the roles see it)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils._topology import discover

    return {name: discover(str(cluster.sysroots / snapshot)) for name, snapshot in NODES.items()}


@pytest.fixture(scope="session")
def plan(topology) -> Dict[str, Any]:
    """The cluster plan the network_operator and rdma_networks roles apply for the two nodes."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils._cluster_plan import plan_cluster

    return plan_cluster(
        {"supernet": "10.200.0.0/16", "rail_prefix": 20, "block_size": 32, "nad_namespace": "gpu-workloads"},
        topology,
        {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
        {"transport": "roce", "rdma_netns_mode": "shared", "mtu": 9000},
        "2.27.3",
    )
