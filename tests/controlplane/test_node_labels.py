"""node_labels (plugins/modules/node_labels.py) on a private control plane with 200 kwok Nodes:
the first call patches exactly the Nodes whose owned labels differ, a rerun makes no write (the
module's counts and the API server's own apiserver_request_total), a missing Node fails naming it."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any, Dict

import pytest
from ansible.module_utils.testing import patch_module_args
from controlplane_support import NODES, REPO, private_cluster, wait_until

sys.path.insert(0, str(REPO / "lab" / "cluster"))
import nodes as lab_nodes  # lab/cluster/nodes.py

from ansible_collections.gpufabric.rollout.plugins.modules import node_labels

P = "gpufabric.io"
N = 200
NAMES = [f"scale-node-{i:03d}" for i in range(N)]
# kube-apiserver's request counter (Kubernetes "Metrics for Kubernetes System Components"):
# one series per verb, resource, subresource and code.
_SERIES = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with private_cluster(tmp_path_factory.mktemp("kube"), tmp_path_factory.mktemp("sysroots"), NODES) as c:
        objs = lab_nodes.describe([(n, "dgx-h200-8x8") for n in NAMES], c.sysroots, "2Ti")
        for i, obj in enumerate(objs):
            if i < 150:  # already labelled as planned
                obj["metadata"]["labels"][f"{P}/node-group"] = "h200"
            if 140 <= i < 150:  # and carrying an owned label the plan no longer wants
                obj["metadata"]["labels"][f"{P}/node-group-old"] = "x"
                obj["metadata"]["labels"][f"{P}/fs-gone"] = "true"
            obj["metadata"]["labels"]["team"] = "ml"  # not owned
        lab_nodes.register(lab_nodes.client(str(c.admin)), objs, workers=8)
        # The node controllers patch each new Node once it is Ready (its not-ready taint removed):
        # wait for them to finish so that the counter counts only the module's writes.
        settled = [node_patches(c), time.monotonic()]

        def quiet():
            now = node_patches(c)
            if now != settled[0]:
                settled[:] = [now, time.monotonic()]
            return time.monotonic() - settled[1] >= 10

        wait_until(quiet, "no PATCH of a Node for 10 s after registering them", timeout=180, interval=1)
        yield c


def node_patches(cluster) -> int:
    """PATCH requests to the Node objects themselves (not their status) the API server counted."""
    total = 0.0
    for line in cluster.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        m = _SERIES.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
        if labels.get("verb") == "PATCH" and labels.get("resource") == "nodes" and not labels.get("subresource"):
            total += float(m.group("value"))
    return int(total)


def run(cluster, labels: Dict[str, Any], capsys, **extra):
    args = dict(kubeconfig=str(cluster.kubeconfig), labels=labels, owned=[f"{P}/fs-*", f"{P}/node-group-old"])
    args.update(extra)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        node_labels.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def labels_of(cluster) -> Dict[str, Dict[str, str]]:
    items = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in items}


def test_first_call_patches_the_differing_nodes_and_a_rerun_writes_nothing(cluster, capsys):
    wanted = {n: {f"{P}/node-group": "h200"} for n in NAMES}
    before = node_patches(cluster)
    rc, out = run(cluster, wanted, capsys, _ansible_check_mode=True)
    assert rc == 0 and out["changed"] and out["patched"] == 60, out
    assert node_patches(cluster) == before  # check mode: no write

    rc, out = run(cluster, wanted, capsys)
    assert rc == 0 and out["changed"], out
    assert (out["read"], out["patched"], out["unchanged"]) == (N + len(NODES), 60, 150 - 10 + len(NODES))
    assert out["patched_nodes"] == NAMES[140:]
    assert node_patches(cluster) - before == 60
    now = labels_of(cluster)
    for name in NAMES:
        assert now[name][f"{P}/node-group"] == "h200" and now[name]["team"] == "ml", name
        assert f"{P}/fs-gone" not in now[name] and f"{P}/node-group-old" not in now[name], name
    for name in NODES:  # not planned: untouched
        assert f"{P}/node-group" not in now[name]

    before = node_patches(cluster)
    # in pages of 64 (the list's continue token followed to the last page): every Node read once
    rc, out = run(cluster, wanted, capsys, page_size=64)
    assert rc == 0 and not out["changed"] and out["patched"] == 0, out
    assert out["read"] == N + len(NODES), out
    assert node_patches(cluster) == before  # zero writes


def test_a_missing_planned_node_fails_naming_it(cluster, capsys):
    before = node_patches(cluster)
    rc, out = run(cluster, {NAMES[0]: {f"{P}/node-group": "other"}, "scale-node-999": {}}, capsys)
    assert rc == 1 and "scale-node-999" in out["msg"] and out["missing"] == ["scale-node-999"], out
    assert node_patches(cluster) == before
    assert labels_of(cluster)[NAMES[0]][f"{P}/node-group"] == "h200"
