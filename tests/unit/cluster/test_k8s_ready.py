"""k8s_ready (plugins/modules/k8s_ready.py, module_utils/apply/k8s_ready.py): a list of objects
waited for in one call; only the objects not yet ready are read again; the timeout names each
object that is not ready with what it lacks; bad arguments are refused before any read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from module_support import run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_ready
from ansible_collections.gpufabric.rollout.plugins.modules import k8s_ready as k8s_ready_module
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client

ESTABLISHED = {"type": "Established", "status": "True"}
CRD = "apiextensions.k8s.io/v1"


class ApiError(Exception):
    def __init__(self, status):
        super().__init__(f"({status}) Reason: boom")
        self.status = status


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def crd(name, established="True", **extra):
    conditions = [{"type": "NamesAccepted", "status": "True"}]
    if established is not None:
        conditions.append(dict({"type": "Established", "status": established}, **extra))
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


class FakeCluster:
    """A DynamicClient stand-in. ``timeline[key]`` is what each read of an object answers in turn (its last answer
    repeats; None: 404); kinds outside ``served`` are not in discovery; every read is recorded."""

    def __init__(self, timeline, served=(("apiextensions.k8s.io/v1", "CustomResourceDefinition"),), faults=None):
        self.timeline = {key: list(answers) for key, answers in timeline.items()}
        self.served = set(served)
        self.faults = faults or {}
        self.reads = []
        self.resources = SimpleNamespace(get=self._resource)

    def _resource(self, api_version, kind):
        if (api_version, kind) not in self.served:
            raise ResourceNotFoundError(f"No matches found for {{'api_version': '{api_version}', 'kind': '{kind}'}}")
        return SimpleNamespace(kind=kind, namespaced=kind != "CustomResourceDefinition")

    def get(self, resource, name, namespace=None):
        key = (resource.kind, namespace, name)
        self.reads.append(key)
        if self.faults.get(key):
            raise self.faults[key].pop(0)
        answers = self.timeline.get(key) or [None]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if answer is None:
            raise ApiError(404)
        return answer


def refs_of(objects):
    refs, bad = k8s_ready.refs(objects)
    assert bad == []
    return refs


def reader(cluster):
    return k8s_ready_module.reader(cluster, retry_timeout=2)


CRDS = ["a.example.com", "b.example.com", "c.example.com"]


def test_all_ready_at_the_first_read_reads_each_once_and_never_sleeps():
    cluster = FakeCluster({("CustomResourceDefinition", None, n): [crd(n)] for n in CRDS})
    clock = FakeClock()
    results = k8s_ready.wait(
        reader(cluster), refs_of(k8s_ready.crd_objects(CRDS)), ESTABLISHED, None, 600, 1, clock.sleep, clock
    )
    assert [r["ready"] for r in results] == [True, True, True]
    assert cluster.reads == [("CustomResourceDefinition", None, n) for n in CRDS]
    assert clock.sleeps == []


def test_only_the_objects_not_yet_ready_are_read_again():
    cluster = FakeCluster(
        {
            ("CustomResourceDefinition", None, "a.example.com"): [crd("a.example.com")],
            ("CustomResourceDefinition", None, "b.example.com"): [
                None,
                crd("b.example.com", "False"),
                crd("b.example.com"),
            ],
            ("CustomResourceDefinition", None, "c.example.com"): [crd("c.example.com", None), crd("c.example.com")],
        }
    )
    clock = FakeClock()
    results = k8s_ready.wait(
        reader(cluster), refs_of(k8s_ready.crd_objects(CRDS)), ESTABLISHED, None, 600, 1, clock.sleep, clock
    )
    assert all(r["ready"] and r["found"] for r in results)
    names = [read[2] for read in cluster.reads]
    assert names.count("a.example.com") == 1
    assert names.count("c.example.com") == 2
    assert names.count("b.example.com") == 3
    assert clock.sleeps == [1, 1]


def test_a_timeout_names_each_object_not_ready_with_what_it_lacks():
    cluster = FakeCluster(
        {
            ("CustomResourceDefinition", None, "a.example.com"): [crd("a.example.com")],
            ("CustomResourceDefinition", None, "b.example.com"): [
                crd("b.example.com", "False", reason="NotAccepted", message="names clash")
            ],
        }
    )
    clock = FakeClock()
    results = k8s_ready.wait(
        reader(cluster), refs_of(k8s_ready.crd_objects(CRDS)), ESTABLISHED, None, 10, 3, clock.sleep, clock
    )
    assert clock.now == 10  # the last sleep is cut to the time left
    assert clock.sleeps == [3, 3, 3, 1]
    assert k8s_ready.failure_message(results, 10) == (
        "CustomResourceDefinition/b.example.com is not ready after 10 s: "
        "Established is False (NotAccepted: names clash); "
        "CustomResourceDefinition/c.example.com is not ready after 10 s: not found"
    )
    assert [r["found"] for r in results] == [True, True, False]


def test_timeout_zero_reads_each_object_once():
    cluster = FakeCluster({("CustomResourceDefinition", None, "a.example.com"): [None, crd("a.example.com")]})
    clock = FakeClock()
    results = k8s_ready.wait(
        reader(cluster), refs_of(k8s_ready.crd_objects(["a.example.com"])), ESTABLISHED, None, 0, 0, clock.sleep, clock
    )
    assert [r["ready"] for r in results] == [False]
    assert len(cluster.reads) == 1 and clock.sleeps == []


def test_state_ready_and_a_status_named_state_first_when_not():
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicNodePolicy",
        "metadata": {"name": "p", "labels": {"x": "y"}},
        "spec": {},
    }
    applied = [{"name": "state-" + "x" * 20, "state": "notReady"}] * 40
    status = {"appliedStates": applied, "reason": "held", "state": "notReady"}
    cluster = FakeCluster(
        {("NicNodePolicy", None, "p"): [{"status": status}, {"status": {"state": "ready"}}]},
        served={("mellanox.com/v1alpha1", "NicNodePolicy")},
    )
    clock = FakeClock()
    first = k8s_ready.wait(reader(cluster), refs_of([policy]), None, "ready", 0, 1, clock.sleep, clock)
    assert first[0]["why"].startswith('status {"state": "notReady", "reason": "held", "appliedStates": [')
    assert len(first[0]["why"]) <= len("status ") + 600 and first[0]["why"].endswith("...")
    second = k8s_ready.wait(reader(cluster), refs_of([policy]), None, "ready", 0, 1, clock.sleep, clock)
    assert second[0]["ready"] and second[0]["why"] == "status.state is ready"


def test_a_kind_not_served_is_missing_until_it_is():
    cluster = FakeCluster({("NicClusterPolicy", None, "n"): [{"status": {"state": "ready"}}]}, served=())
    ref = refs_of([{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "n"}}])
    clock = FakeClock()

    def serve(seconds):  # the CRD is established while the wait sleeps
        clock.sleep(seconds)
        cluster.served.add(("mellanox.com/v1alpha1", "NicClusterPolicy"))

    results = k8s_ready.wait(reader(cluster), ref, None, "ready", 30, 2, serve, clock)
    assert results[0]["ready"] and clock.now == 2
    assert cluster.reads == [("NicClusterPolicy", None, "n")]  # no read before the kind was served


def test_namespaced_objects_are_read_in_their_namespace_and_named_with_it():
    cluster = FakeCluster(
        {("SriovNetwork", "ops", "rail-0"): [{"status": {"state": "ready"}}]},
        served={("sriovnetwork.openshift.io/v1", "SriovNetwork")},
    )
    meta = {"name": "rail-0", "namespace": "ops"}
    obj = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork", "metadata": meta}
    clock = FakeClock()
    results = k8s_ready.wait(reader(cluster), refs_of([obj]), None, "ready", 0, 1, clock.sleep, clock)
    assert results == [
        {"object": "SriovNetwork/ops/rail-0", "found": True, "ready": True, "why": "status.state is ready"}
    ]


def test_a_read_retried_on_a_transient_answer_and_a_refusal_ends_the_wait():
    key = ("CustomResourceDefinition", None, "a.example.com")
    cluster = FakeCluster({key: [crd("a.example.com")]}, faults={key: [ApiError(503)]})
    clock = FakeClock()
    ref = refs_of(k8s_ready.crd_objects(["a.example.com"]))
    assert k8s_ready.wait(reader(cluster), ref, ESTABLISHED, None, 0, 1, clock.sleep, clock)[0]["ready"]
    cluster.faults[key] = [ApiError(403)]
    with pytest.raises(ApiError, match="403"):
        k8s_ready.wait(reader(cluster), ref, ESTABLISHED, None, 60, 1, clock.sleep, clock)


@pytest.mark.parametrize(
    ("objects", "condition", "state", "timeout", "delay", "expected"),
    [
        ("x", None, "ready", 1, 1, "objects: must be a list"),
        ([{"kind": "A", "metadata": {"name": "a"}}], None, "ready", 1, 1, "objects[0]: apiVersion must be"),
        ([{"apiVersion": "v1", "kind": "A"}], None, "ready", 1, 1, "objects[0]: must be an object with apiVersion"),
        ([], ESTABLISHED, "ready", 1, 1, "condition, state: give exactly one"),
        ([], None, None, 1, 1, "condition, state: give exactly one"),
        ([], {"type": "Established"}, None, 1, 1, "condition: must be {type: <condition type>, status:"),
        ([], None, "ready", -1, 1, "timeout: must be a number of seconds, at least 0, got -1"),
        ([], None, "ready", 5, 0, "delay: must be above 0 when timeout is above 0"),
    ],
)
def test_bad_arguments_are_named(objects, condition, state, timeout, delay, expected):
    _refs, bad = k8s_ready.refs(objects)
    bad += k8s_ready.problems(condition, state, timeout, delay)
    assert any(expected in line for line in bad), bad


@pytest.fixture
def api(monkeypatch):
    holder = {}
    monkeypatch.setattr(k8s_client, "get_api_client", lambda module=None: SimpleNamespace(client=holder["cluster"]))
    return holder


def test_the_module_fails_naming_what_is_not_ready_and_reports_missing(api, monkeypatch, capsys):
    api["cluster"] = FakeCluster({("CustomResourceDefinition", None, "a.example.com"): [crd("a.example.com")]})
    objects = k8s_ready.crd_objects(["a.example.com", "b.example.com"])
    args = {"objects": objects, "condition": ESTABLISHED, "timeout": 0}
    rc, out = run_module(k8s_ready_module, args, monkeypatch, capsys)
    assert rc == 1 and out["failed"] and not out["changed"]
    assert out["msg"] == "CustomResourceDefinition/b.example.com is not ready after 0 s: not found"
    assert out["missing"] == out["not_ready"] == ["CustomResourceDefinition/b.example.com"]
    rc, out = run_module(k8s_ready_module, dict(args, fail_on_not_ready=False), monkeypatch, capsys)
    assert rc == 0 and not out["ready"] and out["missing"] == ["CustomResourceDefinition/b.example.com"]


def test_the_module_refuses_bad_arguments_before_any_read(api, monkeypatch, capsys):
    api["cluster"] = cluster = FakeCluster({})
    rc, out = run_module(k8s_ready_module, {"objects": [{"kind": "A"}], "state": "ready"}, monkeypatch, capsys)
    assert rc == 1 and "objects[0]: must be an object with apiVersion" in out["msg"]
    assert cluster.reads == []


def test_crd_objects_filter_is_registered():
    from ansible_collections.gpufabric.rollout.plugins.filter import cluster_plan

    make = cluster_plan.FilterModule().filters()["k8s_crd_objects"]
    assert make(["x.example.com"]) == [
        {"apiVersion": CRD, "kind": "CustomResourceDefinition", "metadata": {"name": "x.example.com"}}
    ]
