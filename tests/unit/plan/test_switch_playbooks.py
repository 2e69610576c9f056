"""playbooks/switches.yml and playbooks/fabric_check.yml against the lab's NVUE stand-in
(lab/nvue/standin.py) on a free loopback port, with an inventory of their own: one NVUE leaf that
carries the lab nodes' eight rails. The GPU nodes are planned from stored discovery (the lab's two
nodes, as tests/unit/plan plans them), so the playbooks run on the controller only (--limit
localhost) and no node is reached.

Apply: --check on a fresh stand-in reports the change and leaves it untouched (no revision); the
first run changes it, the second changes nothing, and --check then reports nothing. Agreement: a
leaf that holds the plan passes; one mismatch each in the PFC priority, the DSCP map, the ECN
threshold and one port's MTU (written into the stand-in's applied tree) fails naming the switch,
the port, the setting and both values."""

from __future__ import annotations

import copy
import json
import socket
import sys

import pytest
import yaml
from conftest import REPO, check, lab_intent, node_facts
from role_runner import ansible_playbook
from test_bad_intent import node_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

sys.path.insert(0, str(REPO / "tests" / "unit" / "switch"))
from nvue_standin import PASSWORD, USER, Standin

pytestmark = pytest.mark.slow
LEAF = "leaf-t"
NODES = ("gpu-node-01", "gpu-node-02")
APPLY_TASK = f"Apply the planned QoS of {LEAF}"


DEAD = "leaf-a-dead"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def switches(address: str, dead_first: bool) -> dict:
    """One stand-in leaf with the eight rails; with ``dead_first``, a leaf nothing answers for rails 0-3
    before it, which then has rails 4-7."""

    def rails(indexes):
        return [{"rail": r, "ports": f"swp{2 * r + 1}-{2 * r + 2}", "nodes": list(NODES)} for r in indexes]

    if not dead_first:
        return {"mode": "apply", "leaves": [{"name": LEAF, "os": "nvue", "address": address, "rails": rails(range(8))}]}
    dead = {"name": DEAD, "os": "nvue", "address": f"127.0.0.1:{closed_port()}", "rails": rails(range(4))}
    return {
        "mode": "apply",
        "leaves": [dead, {"name": LEAF, "os": "nvue", "address": address, "rails": rails(range(4, 8))}],
    }


@pytest.fixture()
def lab(tmp_path, specs, request):
    """(the running stand-in, a function running a playbook with the test's inventory); parametrized
    indirectly with True, a leaf nothing answers for comes first."""
    standin = Standin(tmp_path / "nvue")
    plan_dir = tmp_path / "plan"
    store = _node_records.DiscoveryStore(str(plan_dir / "discovery"))
    for index, name in enumerate(NODES, start=1):
        facts = node_facts(index)
        store.save(
            name,
            _node_records.node_record(
                node_plan(specs, dict(lab_intent(), gpufabric_k8s_node_name=name), facts), facts["topology"]
            ),
        )
    variables = dict(
        lab_intent(),
        gpufabric_k8s_mode="render",
        gpufabric_k8s_render_dir=str(tmp_path / "rendered"),
        plan_dir=str(plan_dir),
        gpufabric_switches=switches(standin.address, getattr(request, "param", False)),
        gpufabric_switch_api_user=USER,
        gpufabric_switch_api_password=PASSWORD,
        gpufabric_switch_api_ca_path=standin.ca,
    )
    assert check(specs, "cluster", variables)[1] == []
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    unreachable = {"ansible_host": "127.0.0.1", "ansible_port": 1}
    inventory = {
        "all": {
            "hosts": {"localhost": local},
            "children": {"gpu_nodes": {"hosts": {name: dict(unreachable) for name in NODES}}},
            "vars": variables,
        }
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    runs = {"count": 0}

    def run(playbook: str, *args: str):
        runs["count"] += 1
        log = tmp_path / f"changes-{runs['count']}.jsonl"
        env = {
            "ANSIBLE_CALLBACK_PLUGINS": str(REPO / "tests" / "callbacks"),
            "ANSIBLE_CALLBACKS_ENABLED": "gpufabric_changes",
            "GPUFABRIC_CHANGES_LOG": str(log),
        }
        done = ansible_playbook(
            tmp_path, "-i", str(tmp_path / "hosts.yml"), "--limit", "localhost",
            str(REPO / "playbooks" / playbook), *args, env=env,
        )  # fmt: skip
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return done, records

    yield standin, run
    standin.stop()


def applied_changed(records) -> list:
    return [r["changed"] for r in records if r["task"] == APPLY_TASK]


def test_apply_converges_a_rerun_changes_nothing_and_check_mode_is_exact(lab, tmp_path):
    standin, run = lab
    before = standin.applied()
    done, records = run("switches.yml", "--check", "--diff")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert applied_changed(records) == [True]
    assert standin.applied() == before  # check mode changed nothing on the switch
    assert standin.server.RequestHandlerClass.state.revisions == {}  # and created no revision
    assert "+interface swp16 link mtu: 9216" in out  # --diff shows the touched settings
    assert PASSWORD not in out
    assert PASSWORD not in "".join(p.read_text() for p in (tmp_path / "plan").rglob("*") if p.is_file())

    done, records = run("switches.yml")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert applied_changed(records) == [True]
    tree = standin.applied()
    assert tree["qos"]["pfc"]["default-global"]["switch-priority"] == {"3": {}}
    assert tree["interface"]["swp16"]["link"]["mtu"] == 9216
    assert len(standin.server.RequestHandlerClass.state.revisions) == 1

    done, records = run("switches.yml")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert applied_changed(records) == [False]
    done, records = run("switches.yml", "--check")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert applied_changed(records) == [False]
    assert len(standin.server.RequestHandlerClass.state.revisions) == 1  # no revision after the first apply


def test_the_agreement_check_passes_on_agreement_and_names_each_injected_mismatch(lab, tmp_path):
    standin, run = lab
    done, _records = run("switches.yml")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    done, _records = run("fabric_check.yml")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert f"Leaves agree with the GPU nodes: {LEAF}" in out

    agreeing = standin.applied()
    tree = copy.deepcopy(agreeing)
    tree["qos"]["pfc"]["default-global"]["switch-priority"] = {"4": {}}  # PFC on the wrong priority
    tree["qos"]["mapping"]["default-global"]["dscp"]["26"]["switch-priority"] = 0  # RoCE DSCP to priority 0
    tree["qos"]["congestion-control"]["default-global"]["traffic-class"]["3"]["min-threshold"] = 90000
    tree["interface"]["swp3"]["link"]["mtu"] = 1500  # rail 1's port of gpu-node-01
    standin.set_applied(tree)
    done, _records = run("fabric_check.yml")
    out = done.stdout + done.stderr
    assert done.returncode != 0
    every = "swp1-16 (gpu-node-01, gpu-node-02, gpu-node-01, gpu-node-02, gpu-node-01, gpu-node-02, gpu-node-01, "
    assert f"{LEAF} {every}" in out, out[-4000:]
    assert "PFC priority is 4, the hosts need 3 (not the CNP priority 6)" in out
    assert "RoCE DSCP 26 to priority is 0, the hosts need 3" in out
    assert "ECN min threshold on traffic class 3 is 90000, the hosts need 150000" in out
    assert f"{LEAF} swp3 (gpu-node-01): MTU is 1500, the hosts need >= 9000 (gpufabric_fabric.mtu)" in out
    assert PASSWORD not in out

    # The network team's export (nv config show -o json) of the agreeing leaf: read instead of the API,
    # whose tree still disagrees.
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / f"{LEAF}.json").write_text(json.dumps([{"header": {"model": "stand-in"}}, {"set": agreeing}]))
    done, _records = run("fabric_check.yml", "-e", f"gpufabric_switch_export_dir={exports}")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert f"Leaves agree with the GPU nodes: {LEAF}" in out


@pytest.mark.parametrize("lab", [True], indirect=True)
def test_the_first_leaf_that_fails_stops_the_run_before_the_next(lab):
    standin, run = lab
    done, records = run("switches.yml")
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"{DEAD}: GET https://127.0.0.1:" in out and "Connection refused" in out, out[-4000:]
    assert [r["task"] for r in records if r["task"].startswith("Apply the planned QoS")] == [
        f"Apply the planned QoS of {DEAD}"
    ]
    assert standin.applied() == {}  # the next leaf was not touched
    assert PASSWORD not in out
