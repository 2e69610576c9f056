"""A private lab control plane for the lab cluster tests (one per test session).

It is started with lab/kube.sh in a temporary GPUFABRIC_KUBE_DIR, so it runs beside `make lab`'s
cluster and any molecule scenario's; the binaries come from lab/controlplane/build.sh (`make
controlplane-test` builds them first). Two GPU nodes are registered from the dgx-h200-8x8
snapshot (lab/cluster/nodes.py), and the upstream CRDs in ../shared/crds are installed when the
folder exists. The cluster is stopped and removed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from controlplane_support import CRDS, NODES, REPO, Cluster, private_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    with private_cluster(tmp_path_factory.mktemp("kube"), tmp_path_factory.mktemp("sysroots"), NODES) as c:
        yield c


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
    from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
    from ansible_collections.gpufabric.rollout.plugins.module_utils._cluster_plan import plan_cluster
    from ansible_collections.gpufabric.rollout.plugins.module_utils._intent import check
    from ansible_collections.gpufabric.rollout.plugins.module_utils._plan_node import fabric_of

    # The variables as the plan hands them to the planner: checked, the specs' defaults filled in.
    specs = load_specs(str(REPO))["plan"]
    spec = {"gpufabric_rails": specs["cluster_intent"]["gpufabric_rails"]}
    spec["gpufabric_fabric"] = specs["node_intent"]["gpufabric_fabric"]
    values, problems = check(
        spec,
        {
            "gpufabric_rails": {
                "supernet": "10.200.0.0/16",
                "rail_prefix": 20,
                "block_size": 32,
                "nad_namespace": "gpu-workloads",
            },
            "gpufabric_fabric": {"transport": "roce", "rdma_netns_mode": "shared", "mtu": 9000},
        },
    )
    assert not problems, problems
    return plan_cluster(
        values["gpufabric_rails"],
        topology,
        {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
        fabric_of(values),
        "2.27.3",
    )
