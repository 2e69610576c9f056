"""WATCH: initial ADDED events, MODIFIED/DELETED, resume from a resourceVersion, selectors,
410 Expired for a version older than the kept history."""

from __future__ import annotations

import threading

from kubernetes import client as k8s
from kubernetes import watch


def _collect(core, ns, stop_after, **kwargs):
    events = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=5, **kwargs):
        events.append((event["type"], event["object"].metadata.name, (event["object"].data or {}).get("k")))
        if len(events) >= stop_after:
            w.stop()
    return events


def test_watch_streams_changes(core, ns):
    core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="w0"), data={"k": "0"}))
    result = []
    thread = threading.Thread(target=lambda: result.extend(_collect(core, ns, 4)))
    thread.start()
    import time

    time.sleep(0.5)
    core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="w1"), data={"k": "1"}))
    core.patch_namespaced_config_map("w1", ns, {"data": {"k": "2"}})
    core.delete_namespaced_config_map("w1", ns)
    thread.join(10)
    assert result == [("ADDED", "w0", "0"), ("ADDED", "w1", "1"), ("MODIFIED", "w1", "2"), ("DELETED", "w1", "2")]


def test_watch_resumes_from_resource_version(core, ns):
    first = core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="r0")))
    core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="r1")))
    core.delete_namespaced_config_map("r0", ns)
    events = _collect(core, ns, 2, resource_version=first.metadata.resource_version)
    assert [(t, n) for t, n, _unused in events] == [("ADDED", "r1"), ("DELETED", "r0")]


def test_watch_label_selector(core, ns):
    for name, tier in (("a", "gpu"), ("b", "cpu"), ("c", "gpu")):
        core.create_namespaced_config_map(
            ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name, labels={"tier": tier}))
        )
    events = _collect(core, ns, 2, label_selector="tier=gpu")
    assert [event[1] for event in events] == ["a", "c"]


def test_watch_from_compacted_resource_version_is_410(double, core, ns):
    import json
    import urllib.request

    old = core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="old")))
    status, body = double.http("POST", "/_double/compact")
    assert status == 200 and int(body["compactedResourceVersion"]) >= int(old.metadata.resource_version)
    url = (
        f"{double.url}/api/v1/namespaces/{ns}/configmaps?watch=true"
        f"&resourceVersion={int(old.metadata.resource_version) - 1}&timeoutSeconds=2"
    )
    with urllib.request.urlopen(url, timeout=10) as resp:
        event = json.loads(resp.readline())
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith("too old resource version")


def test_kubectl_get_watch_only(kubectl, core, ns):
    import subprocess

    proc = subprocess.Popen(
        [*kubectl.argv, "-n", ns, "get", "configmaps", "--watch-only", "-o", "name", "--request-timeout=4s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    import time

    time.sleep(1.5)
    core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="kw")))
    out, _unused = proc.communicate(timeout=15)
    assert "configmap/kw" in out
