"""gpufabric.rollout.validate_plan, the action that plans the validate role's measurements on the
controller (the perftest ring, the NCCL Jobs) and makes the NCCL Pods' SSH key pair, run by
ansible-playbook as the role runs it: results registered, nothing sent to a node, the private key
kept out of the output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from role_runner import REPO, ansible_playbook
from test_nccl_jobs import HOSTS, OPTIONS, cluster_plan
from validate_support import load_file

PLAN_FIXTURES = load_file("validate_plan_action_fixtures", REPO / "tests/unit/plan/conftest.py")

PLAY = """
- name: Plan as the validate role does
  hosts: gpu-node-01,gpu-node-02
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  tasks:
    - name: Ring
      gpufabric.rollout.validate_plan:
        part: rdma_ring
        nodes: "{{ ansible_play_hosts }}"
        topologies: "{{ topologies }}"
        memories: [host, gpu]
      register: ring

    - name: Jobs
      gpufabric.rollout.validate_plan:
        part: nccl_jobs
        network: "{{ network }}"
        hosts: "{{ hosts_map }}"
        options: "{{ options }}"
      register: jobs
      run_once: true

    - name: Key
      gpufabric.rollout.validate_plan:
        part: ssh_keypair
      register: key
      run_once: true
      no_log: true

    - name: Keep what was registered
      ansible.builtin.copy:
        content: "{{ {'ring': ring, 'jobs': jobs, 'key': key} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0600"
"""


def run_play(tmp: Path, variables):
    (tmp / "vars.json").write_text(json.dumps(variables))
    (tmp / "play.yml").write_text(PLAY)
    inventory = "gpu-node-01,gpu-node-02,"
    done = ansible_playbook(
        tmp,
        "-i",
        inventory,
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        f"out={tmp}",
        str(tmp / "play.yml"),
        cwd=tmp,
    )
    return done


def test_the_action_plans_the_ring_the_jobs_and_the_key(tmp_path):
    topologies = {name: PLAN_FIXTURES.node_facts(i)["topology"] for i, name in ((1, "gpu-node-01"), (2, "gpu-node-02"))}
    network = cluster_plan()["network"]
    done = run_play(tmp_path, {"topologies": topologies, "network": network, "hosts_map": HOSTS, "options": OPTIONS})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    first = json.loads((tmp_path / "gpu-node-01.json").read_text())
    second = json.loads((tmp_path / "gpu-node-02.json").read_text())
    # Each node gets its own side of the ring: node 1's clients send to node 2's servers, per rail.
    assert first["ring"]["clients"] and not first["ring"].get("skipped")
    assert {c["peer"] for c in first["ring"]["clients"]} == {"gpu-node-02"}
    assert {s["peer"] for s in second["ring"]["servers"]} == {"gpu-node-01"}
    assert {c["memory"] for c in first["ring"]["clients"]} == {"host", "gpu"}
    # One Job for the node group of both nodes, the same for every host (run once).
    assert (
        [j["nodes"] for j in first["jobs"]["jobs"]] == [sorted(HOSTS)] == [j["nodes"] for j in second["jobs"]["jobs"]]
    )
    assert first["jobs"]["not_run"] == []
    # A real key pair, the same for both hosts, and never printed.
    key = first["key"]
    assert key["private_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert key["public_key"].startswith("ssh-ed25519 ")
    assert second["key"]["private_key"] == key["private_key"]
    body = key["private_key"].splitlines()[1]
    assert body not in done.stdout and body not in done.stderr


def test_the_action_refuses_a_node_outside_the_ring_and_an_unknown_part(tmp_path):
    (tmp_path / "play.yml").write_text(
        """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Outside
      gpufabric.rollout.validate_plan:
        part: rdma_ring
        nodes: [gpu-node-01, gpu-node-02]
        topologies: {}
      ignore_errors: true
      register: outside
    - name: Unknown
      gpufabric.rollout.validate_plan:
        part: rdma
      ignore_errors: true
      register: unknown
    - ansible.builtin.assert:
        that:
          - outside.msg is search('node localhost is not one of nodes')
          - unknown.msg is search("part is 'rdma'; allowed. rdma_ring, nccl_jobs, ssh_keypair")
"""
    )
    done = ansible_playbook(
        tmp_path,
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(tmp_path / "play.yml"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
