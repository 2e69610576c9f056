"""API faults against a private control plane: the cluster layer's publish path
(gpufabric.rollout.k8s_publish, a server-side apply of a component's objects, then pruning) run
through a faulty API server (fault_proxy.py) or across a control-plane restart.

Each case publishes one component's ConfigMaps for the inventory pool-a into a namespace of its own
that also holds a neighbour inventory's objects (pool-b, the same component) and an object nobody
labelled, both written directly; it asserts every planned object (data and labels), the
bystanders untouched (same resourceVersion) and nothing lost, besides the run's outcome.
"""

from __future__ import annotations

import threading
import time

import pytest
from api_publish import bare_cluster, bystanders, configmaps, contents, lost, mismatches, publish
from fault_proxy import FaultProxy


@pytest.fixture(scope="module")
def api_cluster(tmp_path_factory):
    with bare_cluster(tmp_path_factory.mktemp("fault-api") / "kube") as c:
        yield c


@pytest.mark.slow
def test_api_discovery_answers_503_as_the_run_begins(api_cluster, tmp_path, fault_row):
    """The API server answers 503 to its first two discovery requests (GET /apis, as while it or an
    aggregated API restarts): kubernetes.core lets that error out of the module as an exception,
    which the publish must retry like any 503. The run converges, every object right, the
    bystanders untouched."""
    ns = "fault-api-discovery"
    kept = bystanders(api_cluster, ns)
    before = contents(api_cluster, ns)
    planned = configmaps(ns, "pool-a", {f"a-rail-{i:02d}": f"a{i}" for i in range(15)})
    refused = []

    def first_discoveries(method: str, path: str) -> bool:
        if method == "GET" and path.split("?")[0] == "/apis" and len(refused) < 2:
            refused.append(path)
            return True
        return False

    with FaultProxy(api_cluster.admin, tmp_path / "proxy", refuse=first_discoveries) as proxy:
        first = publish(tmp_path / "run1", proxy.kubeconfig, ns, "pool-a", planned)
    final = contents(api_cluster, ns)

    wrong = mismatches(final, planned, kept)
    fault_row.runs = 1
    fault_row.objects_lost = lost(before, final)
    fault_row.survived = first["rc"] == 0 and not wrong
    assert len(proxy.refused) == 2, proxy.refused
    # Refused twice and converged: it came back after each refusal (a run that gave up saw one).
    assert first["rc"] == 0, first["out"]
    assert wrong == [], wrong
    fault_row.check()


@pytest.mark.slow
def test_api_server_restarted_in_the_middle_of_the_cluster_layer(api_cluster, tmp_path, fault_row):
    """The control plane (kube-apiserver with it) is stopped and started again with lab/kube.sh while a
    publish of 40 objects is under way (a proxy that delays each request 80 ms, standing in as the
    load balancer in front of the API server, starts the restart after the 5th write): the run
    converges, or fails naming an object and a rerun converges; every object is present and right."""
    ns = "fault-api-restart"
    kept = bystanders(api_cluster, ns)
    before = contents(api_cluster, ns)
    planned = configmaps(ns, "pool-a", {f"a-rail-{i:02d}": f"a{i}" for i in range(40)})
    pidfile = api_cluster.state / "run" / "kube-apiserver.pid"
    old_pid = pidfile.read_text().strip()
    restart: dict = {}

    def restart_control_plane() -> None:
        restart["began"] = time.monotonic()
        restart["stop"] = api_cluster.kube_sh("stop", check=False).returncode
        restart["start"] = api_cluster.kube_sh("start", check=False).returncode
        restart["ended"] = time.monotonic()

    with FaultProxy(api_cluster.admin, tmp_path / "proxy", delay=0.08, after_writes=(5, restart_control_plane)) as p:
        began = time.monotonic()
        first = publish(tmp_path / "run1", p.kubeconfig, ns, "pool-a", planned)
        ended = time.monotonic()
        down = p.upstream_down
    # The restart ran inside the run; wait for it if the run ended (failed) before it did.
    for thread in threading.enumerate():
        if thread.name == "fault-proxy-trigger":
            thread.join(timeout=120)
    runs = [first]
    if first["rc"] != 0:
        runs.append(publish(tmp_path / "run2", api_cluster.admin, ns, "pool-a", planned))
    final = contents(api_cluster, ns)

    fault_row.runs = len(runs)
    fault_row.objects_lost = lost(before, final)
    wrong = mismatches(final, planned, kept)
    named = first["rc"] == 0 or any(o["metadata"]["name"] in m for o in planned for m in first["failures"])
    fault_row.survived = runs[-1]["rc"] == 0 and named and not wrong
    assert restart.get("stop") == 0 and restart.get("start") == 0, restart
    assert began < restart["began"] < ended, "the restart did not begin during the run"
    assert pidfile.read_text().strip() != old_pid, "kube-apiserver was not restarted"
    assert down > 0, "no request met the API server down: the restart missed the run"
    assert first["rc"] == 0 or named, f"the run failed without naming an object: {first['failures']}"
    assert runs[-1]["rc"] == 0, runs[-1]["out"]
    assert wrong == [], wrong
    fault_row.check()
