"""A node that becomes unreachable inside its upgrade window (playbooks/upgrade.yml) is counted as
failed: the run stops per gpufabric_upgrade_max_fail_percentage after its batch, and the final
status names it as failed with why, not as "not reached (still at their old versions)".

The batch play and the final play are taken from upgrade.yml and run by ansible-playbook on local
hosts; the window's layers are replaced by one task that needs the node (an unreachable one fails
it as unreachable, skipping the rescue), the plan the localhost fact holds by its values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]


def test_a_node_lost_inside_its_window_counts_as_failed_and_stops_the_run(tmp_path):
    plays = yaml.safe_load((REPO / "playbooks" / "upgrade.yml").read_text())
    batch = next(p for p in plays if p["name"] == "Upgrade - one batch of GPU nodes at a time")
    final = next(p for p in plays if p["name"] == "Upgrade - what happened")
    upgrade = {
        "pending": NODES,
        "batches": [NODES[0:2], NODES[2:4]],
        "serial": [2, 2],
        "settings": {"gpufabric_upgrade_max_fail_percentage": 0},
    }
    window = next(t for t in batch["tasks"] if "block" in t)
    window["block"] = [
        {"name": "Stand-in for the layers (needs the node)", "ansible.builtin.command": "true", "changed_when": True},
        next(t for t in window["block"] if t["name"] == "Record the node as upgraded"),
    ]
    window["rescue"] = [t for t in window["rescue"] if t["name"] == "Record why the node failed"]
    batch["serial"] = 2
    batch["vars"] = dict(batch["vars"], __upgrade=upgrade)
    batch["vars"].pop("__upgrade_settings")
    batch["vars"]["__upgrade_settings"] = upgrade["settings"]
    final["vars"]["__upgrade"] = upgrade
    (tmp_path / "play.yml").write_text(yaml.safe_dump([batch, final], sort_keys=False))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    lost = {
        "ansible_connection": "ssh",
        "ansible_host": "127.0.0.1",
        "ansible_port": 9,
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o BatchMode=yes",
    }
    inventory = {
        "all": {
            "hosts": {"localhost": dict(local, gpufabric_intent={"gpufabric_k8s_mode": "render"})},
            "children": {
                "gpufabric_upgrade_pending": {
                    "hosts": {n: (lost if n == "gpu-node-02" else local) for n in NODES},
                    "vars": {"gpufabric_node_plan": {"upgrade": {"layers": []}, "k8s_node_name": "x"}},
                }
            },
        }
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "ansible-tmp").mkdir()
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(tmp_path / "inventory.yml"),
            "-e",
            json.dumps({"ansible_python_interpreter": sys.executable}),
            str(tmp_path / "play.yml"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    said = " ".join(done.stdout.split())
    assert done.returncode != 0, said[-3000:]
    assert "gpu-node-02 : ok=1 changed=0 unreachable=1" in said, said[-3000:]
    # the second batch never ran: max_fail_percentage 0 and one of four failed
    assert "gpu-node-03: not reached" in said and "gpu-node-04: not reached" in said, said[-3000:]
    assert "gpu-node-02: unreachable" in said and "gpu-node-01: upgraded" in said
    assert "The upgrade stopped with 1 failed node(s)" in said
    assert "gpu-node-02 -> the run ended inside this node's maintenance window" in said
    assert "it may be half-upgraded" in said
    assert "Not reached (still at their old versions): gpu-node-03, gpu-node-04." in said
