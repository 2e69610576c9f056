"""Drains fail closed, end to end (roles/node_maintenance tasks/resolve.yml, used by doca_ofed and
gpu_driver before a reload or reboot): ansible-playbook on localhost with a kubeconfig that does
not exist. A host that has run a kubelet is refused, naming it and why; a host that never ran
one is no Kubernetes node and goes on undrained; with no reload to follow nothing is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAY = """
- name: Resolve the Node before a reload
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Resolve
      ansible.builtin.include_role:
        name: gpufabric.rollout.node_maintenance
        tasks_from: resolve
      vars:
        node_maintenance_node_name: gpu-node-01
        node_maintenance_drain: "{{ drain }}"
        node_maintenance_required: "{{ required }}"
        node_maintenance_name_variable: doca_ofed_k8s_node_name
        node_maintenance_sysroot: "{{ sysroot }}"

    - name: Show the target
      ansible.builtin.debug:
        msg: "TARGET {{ node_maintenance_target | to_json }}"
"""


def resolve(tmp: Path, kubelet: bool, required: bool = True, drain: str = "auto"):
    sysroot = tmp / "sysroot"
    (sysroot / "var" / "lib").mkdir(parents=True)
    if kubelet:
        (sysroot / "var" / "lib" / "kubelet").mkdir()
    (tmp / "play.yml").write_text(PLAY)
    (tmp / "ansible-tmp").mkdir()
    variables = {
        "ansible_python_interpreter": sys.executable,
        "gpufabric_kubeconfig": str(tmp / "no-such-kubeconfig"),
        "sysroot": str(sysroot),
        "required": required,
        "drain": drain,
    }
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        KUBECONFIG=str(tmp / "no-such-kubeconfig"),
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-e",
            json.dumps(variables),
            str(tmp / "play.yml"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, " ".join(done.stdout.split())


def test_a_kubelet_host_whose_node_cannot_be_read_is_not_reloaded(tmp_path):
    done, said = resolve(tmp_path, kubelet=True)
    assert done.returncode != 0, said[-2000:]
    assert "localhost is not reloaded or rebooted: it must be drained first (it runs a kubelet)" in said
    assert "could not be read" in said and "doca_ofed_k8s_node_name" in said
    assert "TARGET" not in said


@pytest.mark.parametrize("kubelet, required", [(False, True), (True, False)])
def test_no_kubelet_or_no_reload_goes_on_undrained(tmp_path, kubelet, required):
    done, said = resolve(tmp_path, kubelet=kubelet, required=required)
    assert done.returncode == 0, said[-2000:]
    assert '"in_cluster": false' in said and '"refuse": ""' in said


def test_always_refuses_without_the_node(tmp_path):
    done, said = resolve(tmp_path, kubelet=False, drain="always")
    assert done.returncode != 0 and "doca_ofed_k8s_drain is always" in said, said[-2000:]
