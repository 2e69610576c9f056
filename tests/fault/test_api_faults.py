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
import yaml
from api_publish import bare_cluster, bystanders, configmaps, contents, lost, mismatches, publish
from controlplane_support import REPO
from fault_proxy import FaultProxy

from ansible_collections.gpufabric.rollout.plugins.modules import k8s_apply as _k8s_apply

APPLY = "gpufabric.rollout.k8s_apply"


def retry_bound() -> float:
    """The longest k8s_publish retries one transient answer, in seconds: a task's retries x delay, or the
    retry_timeout of its k8s_apply call (the task's, else the module's documented default), through which
    every apply and prune request goes."""

    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))

    tasks = list(walk(yaml.safe_load((REPO / "roles" / "k8s_publish" / "tasks" / "apply.yml").read_text())))
    default = yaml.safe_load(_k8s_apply.DOCUMENTATION)["options"]["retry_timeout"]["default"]
    module = [float(t[APPLY].get("retry_timeout", default)) for t in tasks if APPLY in t]
    assert module, "k8s_publish applies through gpufabric.rollout.k8s_apply"
    return max([float(int(t.get("retries", 0)) * int(t.get("delay", 0))) for t in tasks] + module)


@pytest.fixture(scope="module")
def api_cluster(tmp_path_factory):
    with bare_cluster(tmp_path_factory.mktemp("fault-api") / "kube") as c:
        yield c


@pytest.mark.slow
def test_api_answers_429_500_409_to_a_share_of_requests(api_cluster, tmp_path, fault_row):
    """A publish with pruning through an API server that answers 429 (Retry-After: 1), 500 or 409 to a
    seeded 30 % of requests converges: every planned object right, the object pool-a no longer plans
    pruned, the neighbour's and the unlabelled object untouched, and a rerun changes nothing."""
    ns = "fault-api-share"
    kept = bystanders(api_cluster, ns)
    # What an earlier run of pool-a made and this plan drops: the faulty run must prune it.
    api_cluster.apply(configmaps(ns, "pool-a", {"a-dropped": "old"}))
    before = contents(api_cluster, ns)
    planned = configmaps(ns, "pool-a", {f"a-rail-{i:02d}": f"a{i}" for i in range(15)})

    with FaultProxy(api_cluster.admin, tmp_path / "proxy", share=0.3, codes=(429, 500, 409), seed=36) as proxy:
        first = publish(tmp_path / "run1", proxy.kubeconfig, ns, "pool-a", planned)
        injected = dict(proxy.injected)
        after = contents(api_cluster, ns)
        second = publish(tmp_path / "run2", proxy.kubeconfig, ns, "pool-a", planned)
    final = contents(api_cluster, ns)

    fault_row.runs = 2
    fault_row.objects_lost = lost(before, after, ["a-dropped"]) + lost(after, final)
    wrong = mismatches(final, planned, kept)
    fault_row.survived = first["rc"] == 0 and second["rc"] == 0 and second["changed"] == 0 and not wrong
    assert all(injected.get(code, 0) > 0 for code in (429, 500, 409)), f"the proxy injected {injected}"
    assert first["rc"] == 0, first["out"]
    assert "a-dropped" not in after, "the object pool-a no longer plans was not pruned"
    assert wrong == [], wrong
    assert second["rc"] == 0 and second["changed"] == 0, second["out"]
    fault_row.check()


@pytest.mark.slow
def test_api_keeps_failing_for_one_object(api_cluster, tmp_path, fault_row):
    """An API server that answers 503 to every request for one object: the run fails within the
    bounded retry time, its message names the object, nothing is lost (the object keeps its earlier
    data, the others are there, the bystanders untouched), and a rerun without the fault converges."""
    ns = "fault-api-refuse"
    kept = bystanders(api_cluster, ns)
    v1 = configmaps(ns, "pool-a", {f"a-rail-{i:02d}": f"v1-{i}" for i in range(15)})
    v2 = configmaps(ns, "pool-a", {f"a-rail-{i:02d}": f"v2-{i}" for i in range(15)})
    earlier = publish(tmp_path / "run1", api_cluster.admin, ns, "pool-a", v1)
    assert earlier["rc"] == 0, earlier["out"]
    before = contents(api_cluster, ns)

    target = f"/namespaces/{ns}/configmaps/a-rail-07"
    with FaultProxy(api_cluster.admin, tmp_path / "proxy", refuse=lambda method, path: target in path) as proxy:
        failed = publish(tmp_path / "run2", proxy.kubeconfig, ns, "pool-a", v2)
    during = contents(api_cluster, ns)
    rerun = publish(tmp_path / "run3", api_cluster.admin, ns, "pool-a", v2)
    final = contents(api_cluster, ns)

    named = any("a-rail-07" in msg for msg in failed["failures"])
    fault_row.runs = 3
    fault_row.objects_lost = lost(before, during) + lost(before, final)
    fault_row.survived = failed["rc"] != 0 and named and rerun["rc"] == 0 and not mismatches(final, v2, kept)
    assert proxy.refused, "the proxy refused nothing: the fault missed the run"
    assert failed["rc"] != 0, failed["out"]
    bound = retry_bound() + 60  # the retries, plus the run's own time on a busy machine
    assert failed["elapsed"] < bound, f"the failing run took {failed['elapsed']:.0f} s (bound {bound} s)"
    assert named, f"the failure does not name a-rail-07: {failed['failures']}"
    assert during["a-rail-07"]["data"] == {"x": "v1-7"}, during["a-rail-07"]
    assert mismatches(during, [], kept) == []
    assert rerun["rc"] == 0, rerun["out"]
    assert mismatches(final, v2, kept) == []
    fault_row.check()


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
