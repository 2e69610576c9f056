"""In apply mode the plan refuses a cluster it cannot ask before any GPU node is read or changed:
playbooks/plan.yml (which site.yml, hosts.yml and cluster.yml import first) stops in its first
play, naming gpufabric_kubeconfig and the cause, and no node play runs. Before, the plan only
printed "could not ask" and went on to the nodes, so the host layer could change nodes that the
cluster layer and the drains then could not reach. Render mode does not ask the cluster at all.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import REPO
from role_runner import ansible_playbook

NODE = "gpu-never-reached"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_plan(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{closed_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    # a node that cannot be reached either: a node play that ran would say so
                    "children": {"gpu_nodes": {"hosts": {NODE: {"ansible_host": "127.0.0.1", "ansible_port": 1}}}},
                    "hosts": {
                        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                    },
                    "vars": {
                        "gpufabric_kubeconfig": str(kubeconfig),
                        "gpufabric_k8s_mode": mode,
                        "gpufabric_k8s_render_dir": str(tmp_path / "rendered"),
                    },
                }
            }
        )
    )
    return ansible_playbook(tmp_path, "-i", str(inventory), str(REPO / "playbooks" / "plan.yml"))


def test_apply_mode_refuses_a_cluster_it_cannot_ask_before_any_node(tmp_path):
    done = run_plan(tmp_path, "apply")
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"The cluster plan is refused: gpufabric_kubeconfig ({tmp_path / 'kubeconfig'})" in out, out[-3000:]
    assert "Connection refused" in out
    assert "set gpufabric_k8s_mode to render" in out
    # the first play stopped the playbook: no node was read
    assert "Plan - read every GPU node" not in out
    assert NODE not in out


def test_render_mode_does_not_ask_the_cluster(tmp_path):
    done = run_plan(tmp_path, "render")
    out = done.stdout + done.stderr
    assert "The cluster plan is refused: gpufabric_kubeconfig" not in out
    # it went on to the node (which cannot be reached here)
    assert "Plan - read every GPU node" in out
