"""A miscabled rail NIC on lab nodes, caught by the validate stage's cabling check (docs/switches.md,
"The cabling check").

Two lab nodes of this file's own (LLDP_LAB_NODES, default cabling-node-01/02), prepared as
lab/prepare.yml prepares any lab node: each gets its cabling map from the lab's switch intent and
the lldpctl stand-in. No control plane: playbooks/validate.yml runs with gpufabric_k8s_mode render
and only the checks that need no host layer (the read-back and the measurements off), so its
verdict is the cabling check's. On the cabling the intent gives, validation passes with one passing
check per rail NIC; with one NIC of the second node miscabled to another node's port, it fails
naming that node, NIC, the expected and the found switch port, in the run's failure and in the
report; with the fault removed, it passes again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NODES = tuple(os.environ.get("LLDP_LAB_NODES", "cabling-node-01 cabling-node-02").split())
SNAPSHOTS = ("dgx-h200-8x8@1", "dgx-h200-8x8@2")
# Beside inventory/lab's depth: its group_vars (linked) find the checkout at inventory_dir/../..
INVENTORY = REPO / ".lab" / "cabling-inventory"
MISCABLED = "/etc/gpufabric-lab/lldp-miscabled.json"
CABLING = "/etc/gpufabric-lab/lldp-cabling.json"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class CablingLab:
    def __init__(self, state: Path):
        self.state = state
        self.env = dict(
            os.environ,
            PATH=f"{REPO / '.venv' / 'bin'}:{REPO / '.tools' / 'bin'}:{os.environ['PATH']}",
            ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
        )
        out = subprocess.run(
            ["bash", "-c", 'source lab/common.sh && lab_connection_env && env | grep -E "^(ANSIBLE_|GPUFABRIC_LAB)"'],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.env.update(dict(line.split("=", 1) for line in out.splitlines()))
        self.env.setdefault("ANSIBLE_STRATEGY_PLUGINS", "")

    def start(self) -> None:
        INVENTORY.mkdir(parents=True, exist_ok=True)
        link = INVENTORY / "group_vars"
        if not link.is_symlink():
            link.symlink_to(Path("..") / ".." / "inventory" / "lab" / "group_vars")
        hosts = {n: {"gpufabric_lab_snapshot": s} for n, s in zip(NODES, SNAPSHOTS)}
        controller = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
        inv = {"all": {"children": {"gpu_nodes": {"hosts": hosts}}, "hosts": {"localhost": controller}}}
        (INVENTORY / "hosts.yml").write_text("---\n" + yaml.safe_dump(inv, sort_keys=False))
        subprocess.run([str(REPO / "lab" / "nodes.sh"), "up", *NODES], cwd=REPO, env=self.env, check=True)
        rc, text = self.playbook("prepare", str(REPO / "lab" / "prepare.yml"))
        assert rc == 0, f"the cabling lab was not prepared:\n{text[-4000:]}"

    def down(self) -> None:
        subprocess.run([str(REPO / "lab" / "nodes.sh"), "down", *NODES], cwd=REPO, env=self.env, check=False)
        shutil.rmtree(INVENTORY, ignore_errors=True)

    def sh(self, node: str, script: str) -> str:
        done = subprocess.run(["podman", "exec", node, "sh", "-c", script], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{node}: {script}: {done.stdout}{done.stderr}"
        return done.stdout

    def playbook(self, name: str, *args: str):
        tmp = tempfile.mkdtemp(prefix="gf.")
        try:
            done = subprocess.run(
                [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(INVENTORY), *args],
                cwd=REPO,
                env=dict(self.env, TMPDIR=tmp),
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        text = ANSI.sub("", done.stdout + done.stderr)
        (self.state / f"{name}.log").write_text(text)
        return done.returncode, text

    def validate(self, name: str):
        """playbooks/validate.yml, render mode, with only the checks that need no host layer."""
        reports = self.state / "reports"
        shutil.rmtree(reports, ignore_errors=True)
        extra = {
            "gpufabric_lab_connection": self.env["GPUFABRIC_LAB_CONNECTION"],
            "gpufabric_k8s_mode": "render",
            "validate_readback": False,
            "validate_rdma": False,
            "validate_nccl": False,
            "validate_probe": False,
            "validate_reuse_hours": 0,
            "validate_report_dir": str(reports),
            "plan_dir": str(self.state / "plan"),
            "gpufabric_report_path": str(self.state / "rollout-report.txt"),
            "gpufabric_k8s_render_dir": str(self.state / "rendered"),
        }
        rc, text = self.playbook(name, "-e", json.dumps(extra), str(REPO / "playbooks" / "validate.yml"))
        report = (reports / "validation.txt").read_text() if (reports / "validation.txt").exists() else ""
        return rc, text, report


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> CablingLab:
    lab = CablingLab(tmp_path_factory.mktemp("cabling"))
    lab.down()  # a lab a killed session left behind (these names are this file's own)
    try:
        lab.start()
        yield lab
    finally:
        lab.down()


def cabling_lines(report: str, node: str) -> List[str]:
    return [line for line in report.splitlines() if line.startswith(f"== Cabling by LLDP {node} ")]


def test_a_miscabled_nic_is_named_by_the_validate_gate(lab, fault_row):
    first, second = NODES
    rc, text, report = lab.validate("correct")
    fault_row.runs += 1
    assert rc == 0, text[-4000:]
    for node in NODES:
        assert cabling_lines(report, node) == [f"== Cabling by LLDP {node} (8/8 passed)"], report
    assert (lab.state / "plan" / "switches" / "leaf-a.nvue.yaml").is_file()
    assert (lab.state / "plan" / "switches" / "leaf-b.sonic.yaml").is_file()

    # The second node's rail-5 NIC cabled to the first node's rail-6 port.
    maps: Dict[str, dict] = {n: json.loads(lab.sh(n, f"cat {CABLING}")) for n in NODES}
    netdev = next(k for k, v in maps[second].items() if v["rail"] == 5)
    wrong = next(v for v in maps[first].values() if v["rail"] == 6)
    right = maps[second][netdev]
    fault = json.dumps({netdev: {"switch": wrong["switch"], "port": wrong["port"]}})
    lab.sh(second, f"printf '%s' '{fault}' > {MISCABLED}")
    try:
        rc, text, report = lab.validate("miscabled")
        fault_row.runs += 1
        assert rc != 0, text[-4000:]
        named = re.compile(
            rf"FAIL cabling {re.escape(second)} mlx5_\d+ \({re.escape(netdev)}, rail 5\): LLDP neighbour = "
            rf"{wrong['switch']} {wrong['port']} \(expected {right['switch']} {right['port']}\)"
        )
        assert named.search(text), text[-4000:]
        assert named.search(report), report
        assert cabling_lines(report, second) == [f"== Cabling by LLDP {second} (7/8 passed)"]
        assert cabling_lines(report, first) == [f"== Cabling by LLDP {first} (8/8 passed)"]
    finally:
        lab.sh(second, f"rm -f {MISCABLED}")
    rc, text, report = lab.validate("repaired")
    fault_row.runs += 1
    assert rc == 0, text[-4000:]
    fault_row.survived = True
    fault_row.check()
