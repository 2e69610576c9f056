"""A private lab control plane for the integration tests (one per test session).

It is started with lab/kube.sh in a temporary GPUFABRIC_KUBE_DIR, so it runs beside `make lab`'s
cluster and any molecule scenario's; the binaries come from lab/controlplane/build.sh (`make
controlplane-test` builds them first). Two GPU nodes are registered from the dgx-h200-8x8
snapshot (lab/cluster/nodes.py), and the upstream CRDs in ../shared/crds are installed when the
folder exists. The cluster is stopped and removed at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO.parent / "shared" / "crds"
_COLLECTIONS = REPO / ".collections"
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))

NODES = {"gpu-node-01": "dgx-h200-8x8@1", "gpu-node-02": "dgx-h200-8x8@2"}


def wait_until(check: Callable[[], Any], what: str, timeout: float = 60, interval: float = 0.25) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"{what}: not reached within {timeout} s (last: {last!r})")


class Cluster:
    def __init__(self, state: Path, bindir: Path, sysroots: Path):
        self.state = state
        self.bin = bindir
        self.sysroots = sysroots
        self.admin = state / "admin.kubeconfig"
        self.kubeconfig = state / "kubeconfig"  # the collection's least-privilege identity
        self.env = dict(os.environ, GPUFABRIC_KUBE_DIR=str(state))

    def kube_sh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(REPO / "lab" / "kube.sh"), *args], env=self.env, capture_output=True, text=True, check=check
        )

    def kubectl(self, *args: str, kubeconfig: Optional[Path] = None, check: bool = True, timeout: float = 120):
        res = subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(kubeconfig or self.admin), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if check and res.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def apply(self, objects: List[Dict[str, Any]], kubeconfig: Optional[Path] = None) -> None:
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        res = subprocess.run(
            [
                str(self.bin / "kubectl"),
                "--kubeconfig",
                str(kubeconfig or self.admin),
                "apply",
                "--server-side",
                "--field-manager=integration-test",
                "-f",
                "-",
            ],
            input=doc,
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            pytest.fail(f"kubectl apply failed: {res.stderr.strip()}")

    def api(self, kubeconfig: Optional[Path] = None):
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.admin))


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
