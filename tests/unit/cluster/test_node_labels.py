"""The node_labels module (plugins/modules/node_labels.py) against a fake API server: one paginated
list, a merge patch only for the Nodes whose owned labels differ, none on a rerun, retries on
409/429/5xx, and failures naming the Node or the variable before any write."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from module_support import run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import node_labels as _node_labels
from ansible_collections.gpufabric.rollout.plugins.modules import node_labels
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client

REPO = Path(__file__).resolve().parents[3]
P = "gpufabric.io"


class FakeApi:
    """Nodes in memory behind DynamicClient.request's signature; records every request."""

    def __init__(self, nodes: Dict[str, Dict[str, str]], failures: Optional[Dict[str, List[int]]] = None):
        self.nodes = {name: dict(labels) for name, labels in nodes.items()}
        self.failures = failures or {}  # Node name -> HTTP statuses its next PATCHes answer
        self.calls: List[tuple] = []
        self.lock = threading.Lock()

    def request(self, method, path, body=None, **params):
        with self.lock:
            self.calls.append((method, path, params.get("content_type")))
        if method == "GET" and path == "/api/v1/nodes":
            # metadata only: the status of thousands of Nodes is not sent
            assert "as=PartialObjectMetadataList" in params["header_params"]["Accept"]
            names = sorted(self.nodes)
            start = int(params.get("_continue") or 0)
            page = names[start : start + int(params["limit"])]
            more = start + len(page) < len(names)
            return {
                "metadata": {"continue": str(start + len(page))} if more else {},
                "items": [{"metadata": {"name": n, "labels": dict(self.nodes[n])}} for n in page],
            }
        if method == "PATCH" and path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            with self.lock:
                pending = self.failures.get(name) or []
                if pending:
                    raise ApiException(status=pending.pop(0), reason="injected")
            assert params["content_type"] == "application/merge-patch+json"
            for key, value in body["metadata"]["labels"].items():
                if value is None:
                    self.nodes[name].pop(key, None)
                else:
                    self.nodes[name][key] = value
            return {"metadata": {"name": name, "labels": self.nodes[name]}}
        raise AssertionError(f"unexpected request {method} {path}")

    def verbs(self, verb: str) -> int:
        return sum(1 for c in self.calls if c[0] == verb)


@pytest.fixture
def api(monkeypatch):
    holder: Dict[str, Any] = {}

    def client(module=None):
        return type("Client", (), {"client": holder["api"]})()

    monkeypatch.setattr(k8s_client, "get_api_client", client)
    return holder


def _cluster(n: int) -> Dict[str, Dict[str, str]]:
    return {f"gpu-node-{i:02d}": {"kubernetes.io/hostname": f"gpu-node-{i:02d}"} for i in range(n)}


def _run(api, fake, monkeypatch, capsys, labels, **extra):
    api["api"] = fake
    args = dict({"owned": [f"{P}/node-group", f"{P}/fs-*"], "page_size": 2, "retry_timeout": 5}, labels=labels)
    args.update(extra)
    return run_module(node_labels, args, monkeypatch, capsys)


def test_patches_only_the_differing_nodes_and_a_rerun_writes_nothing(api, monkeypatch, capsys):
    nodes = _cluster(5)
    nodes["gpu-node-00"][f"{P}/node-group"] = "h200"  # already right
    nodes["gpu-node-01"][f"{P}/node-group"] = "old"  # wrong value
    nodes["gpu-node-02"].update({f"{P}/node-group": "h200", f"{P}/fs-gone": "true", "team": "a"})  # stale owned key
    fake = FakeApi(nodes)
    wanted = {f"gpu-node-0{i}": {f"{P}/node-group": "h200"} for i in range(4)}
    rc, out = _run(api, fake, monkeypatch, capsys, wanted)
    assert rc == 0 and out["changed"], out
    assert (out["read"], out["patched"], out["unchanged"]) == (5, 3, 2)
    assert out["patched_nodes"] == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert fake.verbs("GET") == 3  # 5 Nodes in pages of 2: one list, paginated
    assert fake.verbs("PATCH") == 3
    assert fake.nodes["gpu-node-02"] == {
        "kubernetes.io/hostname": "gpu-node-02",
        f"{P}/node-group": "h200",
        "team": "a",  # not owned: kept
    }
    assert f"{P}/node-group" not in fake.nodes["gpu-node-04"]  # not planned: untouched

    fake.calls.clear()
    rc, out = _run(api, fake, monkeypatch, capsys, wanted)
    assert rc == 0 and not out["changed"], out
    assert (out["patched"], out["unchanged"]) == (0, 5)
    assert fake.verbs("PATCH") == 0 and fake.verbs("GET") == 3


def test_check_mode_reports_and_diffs_without_writing(api, monkeypatch, capsys):
    fake = FakeApi(_cluster(3))
    before = {n: dict(v) for n, v in fake.nodes.items()}
    rc, out = _run(
        api,
        fake,
        monkeypatch,
        capsys,
        {"gpu-node-01": {f"{P}/node-group": "h200"}},
        _ansible_check_mode=True,
        _ansible_diff=True,
    )
    assert rc == 0 and out["changed"] and out["patched_nodes"] == ["gpu-node-01"], out
    assert out["diff"] == [
        {
            "before_header": "Node gpu-node-01",
            "after_header": "Node gpu-node-01",
            "before": {},
            "after": {f"{P}/node-group": "h200"},
        }
    ]
    assert fake.verbs("PATCH") == 0 and fake.nodes == before


def test_a_missing_planned_node_fails_naming_it_before_any_write(api, monkeypatch, capsys):
    fake = FakeApi(_cluster(2))
    wanted = {"gpu-node-00": {f"{P}/node-group": "h200"}, "gpu-node-99": {f"{P}/node-group": "h200"}}
    rc, out = _run(api, fake, monkeypatch, capsys, wanted)
    assert rc == 1 and "gpu-node-99" in out["msg"] and "gpu-node-00" not in out["msg"], out
    assert out["missing"] == ["gpu-node-99"] and fake.verbs("PATCH") == 0


def test_prune_unplanned_removes_owned_labels_of_nodes_outside_the_plan(api, monkeypatch, capsys):
    nodes = _cluster(2)
    nodes["gpu-node-01"].update({f"{P}/node-group": "h200", "team": "a"})
    fake = FakeApi(nodes)
    rc, out = _run(api, fake, monkeypatch, capsys, {}, prune_unplanned=True)
    assert rc == 0 and out["patched_nodes"] == ["gpu-node-01"], out
    assert fake.nodes["gpu-node-01"] == {"kubernetes.io/hostname": "gpu-node-01", "team": "a"}


def test_retries_on_throttling_and_conflict_then_succeeds(api, monkeypatch, capsys):
    fake = FakeApi(_cluster(2), failures={"gpu-node-01": [429, 409, 503]})
    monkeypatch.setattr(_k8s_retry.time, "sleep", lambda s: None)
    rc, out = _run(api, fake, monkeypatch, capsys, {"gpu-node-01": {f"{P}/node-group": "h200"}})
    assert rc == 0 and out["patched"] == 1, out
    assert fake.verbs("PATCH") == 4 and fake.nodes["gpu-node-01"][f"{P}/node-group"] == "h200"


def test_a_node_that_keeps_failing_fails_naming_it_within_the_retry_time(api, monkeypatch, capsys):
    fake = FakeApi(_cluster(3), failures={"gpu-node-02": [503] * 1000, "gpu-node-01": [403]})
    wanted = {n: {f"{P}/node-group": "h200"} for n in ("gpu-node-00", "gpu-node-01", "gpu-node-02")}
    rc, out = _run(api, fake, monkeypatch, capsys, wanted, retry_timeout=0.3)
    assert rc == 1, out
    assert "gpu-node-02" in out["msg"] and "503" in out["msg"]
    assert "gpu-node-01" in out["msg"] and "gpu-node-00" not in out["msg"]
    assert fake.verbs("PATCH") < 100  # backed off, not a busy loop
    assert fake.nodes["gpu-node-00"][f"{P}/node-group"] == "h200"


@pytest.mark.parametrize(
    "labels,named",
    [
        ({"gpu-node-00": {f"{P}/node-group": "has space"}}, "labels['gpu-node-00']['gpufabric.io/node-group']"),
        ({"gpu-node-00": {"bad key!": "x"}}, "'bad key!' is not a valid label key"),
        ({"../nodes/x": {f"{P}/node-group": "h200"}}, "'../nodes/x' is not a Node name"),
        ({"gpu-node-00": {f"{P}/node-group": 3}}, "3 is not a valid label value"),
    ],
)
def test_bad_input_fails_naming_the_variable_before_any_request(api, monkeypatch, capsys, labels, named):
    fake = FakeApi(_cluster(1))
    rc, out = _run(api, fake, monkeypatch, capsys, labels)
    assert rc == 1 and named in out["msg"], out
    assert fake.calls == []


def test_owned_prefixes_and_keys():
    assert _node_labels.owns(f"{P}/fs-data", [f"{P}/fs-*"])
    assert not _node_labels.owns(f"{P}/fsx", [f"{P}/fs-*"])
    assert _node_labels.owns(f"{P}/node-group", [f"{P}/node-group"])
    assert not _node_labels.owns(f"{P}/node-group-2", [f"{P}/node-group"])


def test_no_cluster_role_labels_nodes_one_task_per_node():
    """Every Node label task of the cluster layer is one node_labels call, not a loop over Nodes."""
    found = 0
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            for block in [task, *(task.get("block") or [])]:
                k8s = block.get("kubernetes.core.k8s") or {}
                definition = k8s.get("definition")
                kind = k8s.get("kind") or (definition.get("kind") if isinstance(definition, dict) else None)
                if kind == "Node":
                    assert "loop" not in block, f"{path.relative_to(REPO)}: {block.get('name')} loops per Node"
                if "gpufabric.rollout.node_labels" in block:
                    assert "loop" not in block
                    if path.parts[-3] == "plan":  # the plan's read of the Nodes: it writes nothing
                        assert block.get("check_mode") is True, f"{path.relative_to(REPO)}: {block.get('name')}"
                        continue
                    found += 1
    assert found == 4  # network_operator, rdma_networks, gpu_operator, storage_csi
