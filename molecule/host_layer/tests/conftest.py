"""Testinfra fixtures for the host_layer scenario: the three lab nodes, read over SSH as users read servers.

The nodes are reached the way Ansible reaches them: their sshd, as the unprivileged lab user with
sudo, through .lab/ssh/config (lab/nodes.sh writes it; it multiplexes one connection per node).
Each check then costs one multiplexed SSH session, where testinfra's podman:// backend starts a
`podman exec` per command (a conmon and a runtime process each), and its ansible backend one Ansible
process per command. Everything here only reads: files, the lab's
hardware tree (sysroot), tool output, systemd state. Expected values come from the lab snapshots
(lab/snapshots/layouts) and the scenario's intent (molecule.yml), worked out by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import testinfra

SYSROOT = "/var/lib/gpufabric-lab/sysroot"
NODES = {"mofed": "host-layer-mofed", "inbox": "host-layer-inbox", "pcie": "host-layer-pcie"}
PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
SSH_CONFIG = PROJECT / ".lab" / "ssh" / "config"


def _ephemeral() -> Path:
    path = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    if not path:
        pytest.fail("MOLECULE_EPHEMERAL_DIRECTORY is not set: run these tests through molecule verify")
    return Path(path)


@pytest.fixture(scope="session")
def ephemeral() -> Path:
    return _ephemeral()


@pytest.fixture(scope="session")
def rebooted(ephemeral) -> bool:
    """True in the verify after the side effect (which reboots every node and leaves this marker)."""
    return (ephemeral / "rebooted").exists()


def _host(name: str):
    return testinfra.get_host(f"ssh://{name}", ssh_config=str(SSH_CONFIG), sudo=True)


@pytest.fixture(scope="session")
def mofed():
    return _host(NODES["mofed"])


@pytest.fixture(scope="session")
def inbox():
    return _host(NODES["inbox"])


@pytest.fixture(scope="session")
def pcie():
    return _host(NODES["pcie"])


@pytest.fixture(scope="session", params=sorted(NODES))
def node(request):
    """Each node in turn, as (short name, host)."""
    return request.param, _host(NODES[request.param])


def read_text(host, path: str) -> str:
    f = host.file(path)
    assert f.exists, f"{host.backend.get_hostname()}: {path} is missing"
    return f.content_string


def read_json(host, path: str):
    return json.loads(read_text(host, path))


def sys_path(relative: str) -> str:
    return f"{SYSROOT}/{relative}"


def _json_per_host(path: str):
    """A reader of the JSON file `path` on a host, read once per host in the session."""
    cache = {}

    def get(host):
        name = host.backend.get_hostname()
        if name not in cache:
            cache[name] = read_json(host, path)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def roce_plan():
    """The roce plan each node keeps for its boot service (/etc/gpufabric/roce/plan.json)."""
    return _json_per_host("/etc/gpufabric/roce/plan.json")


@pytest.fixture(scope="session")
def topology():
    """The topology each node's topology role wrote (/var/lib/gpufabric/topology/topology.json)."""
    return _json_per_host("/var/lib/gpufabric/topology/topology.json")


@pytest.fixture(scope="session")
def node_record(ephemeral):
    """What the plan keeps of each node (plan_dir/discovery/<host>.json; plan_dir is under the
    scenario's ephemeral directory, molecule.yml): its filesystems, GPU stack and compact topology."""

    def get(host):
        path = ephemeral / "plan" / "discovery" / f"{host.backend.get_hostname()}.json"
        assert path.exists(), f"{path}: the plan stored no record of this node"
        return json.loads(path.read_text(encoding="utf-8"))

    return get
