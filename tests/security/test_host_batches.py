"""Blast radius of the host layer (playbooks/hosts.yml): the play that configures the GPU nodes runs
in batches of gpufabric_batch_size and stops after a batch once more than
gpufabric_max_fail_percentage of the nodes failed, naming the failed nodes and those not reached.

The play's own keywords, its first task, the block that configures a node (its rescue) and its last
tasks, and the last play of hosts.yml, are taken from hosts.yml and run by ansible-playbook on local
hosts, with the roles replaced by a task that writes the batch each node ran in and fails on chosen
nodes (a reload that broke). A first play stands for the plan plays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NODES = [f"gpu-node-{i:02d}" for i in range(1, 11)]


def configure_play():
    plays = yaml.safe_load((REPO / "playbooks" / "hosts.yml").read_text())
    return next(p for p in plays if p.get("hosts") == "gpu_nodes")


def last_play():
    """hosts.yml's last play, which fails the nodes whose configuration failed (after the report)."""
    plays = yaml.safe_load((REPO / "playbooks" / "hosts.yml").read_text())
    return next(p for p in plays if p.get("name") == "Fail the GPU nodes whose configuration failed")


def run(tmp: Path, batch_size, max_fail, failing):
    play = configure_play()
    log = tmp / "batches.log"
    window = {
        "name": "Stand-in for the roles: note the batch, fail where a reload broke",
        "ansible.builtin.shell": f"echo \"{{{{ ansible_play_batch | join(',') }}}}\" >> {log}",
        "failed_when": "inventory_hostname in failing",
    }
    test_play = {key: play[key] for key in ("name", "hosts", "gather_facts", "order", "serial")}
    configure = next(t for t in play["tasks"] if "block" in t)
    # The block as hosts.yml has it: its first task (the node's batch started), then a stand-in for the
    # roles, and its rescue, less the writes of the report (a controller file; not this test's point).
    reached = configure["block"][0]
    assert reached.get("ansible.builtin.set_fact", {}).get("__hosts_reached") is True, reached
    block = dict(configure, block=[reached, window])
    block["rescue"] = [t for t in configure["rescue"] if "ansible.builtin.import_tasks" not in t]
    assert block["rescue"], "hosts.yml's block lost its rescue"
    test_play["tasks"] = [block]
    test_play["post_tasks"] = play["post_tasks"][-2:]
    # hosts.yml plans first; the configure play's keywords see hostvars only after a play has run.
    plan = {"name": "Plan first", "hosts": "gpu_nodes", "gather_facts": False, "tasks": [{"ansible.builtin.ping": {}}]}
    (tmp / "play.yml").write_text(yaml.safe_dump([plan, test_play, last_play()], sort_keys=False))
    intent = {"gpufabric_batch_size": batch_size, "gpufabric_max_fail_percentage": max_fail}
    inventory = {
        "all": {
            "children": {
                "gpu_nodes": {
                    "hosts": {n: {} for n in reversed(NODES)},
                    "vars": {"ansible_connection": "local", "gpufabric_intent": intent, "failing": failing},
                }
            }
        }
    }
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "ansible-tmp").mkdir()
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS="4",
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(tmp / "inventory.yml"),
            "-e",
            json.dumps({"ansible_python_interpreter": sys.executable}),
            str(tmp / "play.yml"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    batches = []
    for line in log.read_text().splitlines() if log.exists() else []:
        if line.split(",") not in batches:
            batches.append(line.split(","))
    return done, batches


def test_the_host_layer_runs_in_batches_of_the_batch_size_in_name_order(tmp_path):
    done, batches = run(tmp_path, "30%", 0, [])
    assert done.returncode == 0, done.stdout[-3000:]
    assert batches == [NODES[0:3], NODES[3:6], NODES[6:9], NODES[9:10]], done.stdout[-3000:]


def test_the_default_batch_is_ten_percent():
    assert configure_play()["serial"].strip().endswith("| first | default('10%') }}")


@pytest.mark.parametrize(
    "max_fail, failing, ran, stopped",
    [
        # 1 of 10 failed: 10 % is not more than 10 %, every batch runs
        (10, ["gpu-node-03"], 5, False),
        # 0 stops after the batch of the first failure; its other node finishes
        (0, ["gpu-node-03"], 2, True),
        # 2 of 10 failed in batch 2 and 3: stops after batch 3
        (10, ["gpu-node-03", "gpu-node-05"], 3, True),
    ],
)
def test_the_run_stops_after_the_batch_that_crosses_the_failure_threshold(tmp_path, max_fail, failing, ran, stopped):
    done, batches = run(tmp_path, 2, max_fail, failing)
    assert done.returncode != 0, "a failed node fails the run"
    assert batches == [NODES[i : i + 2] for i in range(0, 2 * ran, 2)], done.stdout[-3000:]
    if stopped:
        not_reached = NODES[2 * ran :]
        said = " ".join(done.stdout.split())
        assert "Stopping after this batch" in said
        assert f"({', '.join(failing)})" in said
        assert f"Not reached (unchanged by this run): {', '.join(not_reached)}." in said
    else:
        assert "Stopping after this batch" not in done.stdout


@pytest.mark.parametrize(
    "max_fail, ran, stopped",
    [
        # 1 of 10 failed, in a batch of its own: stops after it, naming it and the nodes not reached
        (0, 3, True),
        # 10 % is not more than 10 %: every batch runs, although one batch failed entirely
        (10, 10, False),
    ],
)
def test_a_batch_whose_every_node_failed_is_counted_like_any_other(tmp_path, max_fail, ran, stopped):
    """Ansible itself ends a run once every node of a batch has failed (a batch of one, always),
    before the stop could name the nodes not reached (and before the report): the configure play
    records a node's failure instead, and the last play fails the node."""
    done, batches = run(tmp_path, 1, max_fail, ["gpu-node-03"])
    said = " ".join(done.stdout.split())
    assert done.returncode != 0, "a failed node fails the run"
    assert batches == [[n] for n in NODES[:ran]], done.stdout[-3000:]
    assert "gpu-node-03 failed: Stand-in for the roles" in said, said[-3000:]
    stop = "Stopping after this batch: 1 of 10 GPU node(s) failed or became unreachable (gpu-node-03)"
    assert (stop in said) == stopped, said[-3000:]
    if stopped:
        assert f"Not reached (unchanged by this run): {', '.join(NODES[3:])}." in said
