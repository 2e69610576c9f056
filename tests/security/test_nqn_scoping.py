"""Issue 37 point 9: NVMe-oF `nvme connect-all` attached every subsystem the discovery controller
offered, not the planned NQN. A storage array that also offers this host another subsystem (another
tenant's, or one an attacker added to the host's allow list) had its namespaces attached as block
devices on the GPU node, at every boot too (nvmf-autoconnect read the role's discovery.conf).

Replayed on the lab's nvme simulator (lab/simulators/nvme): its discovery controller offers the
planned subsystem and one more; what storage_client does with the plan (the connect script now, or
before the fix, discovery.conf + connect-all) may connect the planned NQN only, on both paths, and
the one connected anyway (by someone else) is reported, not disconnected.
"""

from __future__ import annotations

import json

import pytest
import test_lab_storage as lab_storage
import yaml
from storage_support import REPO, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node

# Reuse the lab fixtures of tests/unit/storage/test_lab_storage.py.
pristine = lab_storage.pristine
lab = lab_storage.lab
PLANNED = "nqn.2026-01.io.gpufabric.lab:blocks"
EXTRA = "nqn.2026-01.io.example.other-tenant:secrets"
ROLE = REPO / "roles" / "storage_client"


@pytest.fixture()
def offered(lab):
    """The lab's discovery controller offers one subsystem more than the plan names."""
    declaration = json.loads((lab / "etc/gpufabric-lab/storage.json").read_text())
    declaration["nvmeof"][0]["subsystems"].append(
        {"nqn": EXTRA, "namespaces": [{"nsid": 1, "uuid": "0b5e1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d", "size_gib": 1}]}
    )
    (lab / "etc/gpufabric-lab/storage.json").write_text(json.dumps(declaration))
    return lab


@pytest.fixture(scope="module")
def section():
    from storage_support import PLAN

    values, problems = PLAN.check(PLAN.load_specs(str(REPO)), "node", lab_variables())
    assert problems == []
    return _plan_node.plan_node(values, node_facts(1))["storage_client"]


def role_connects(lab, section):
    """What storage_client does with the plan's NVMe-oF section: its connect script over the planned
    connections (after the fix); before it, discovery.conf and `nvme connect-all`."""
    nvme = section["nvme"]
    if "conf" in nvme and lab_storage.CONNECT.exists():
        lab_storage.connect_nvme(lab, section)
        return
    (lab / "etc/nvme").mkdir(parents=True, exist_ok=True)
    (lab / "etc/nvme/discovery.conf").write_text("\n".join(nvme["discovery"]) + "\n")
    lab_storage.run(lab, "nvme", "connect-all")


def connected(lab, section):
    observed = lab_storage.readback(lab, {"storage_client": section})[1]
    return {c["subsysnqn"] for c in observed["nvme"]["controllers"] if c["transport"] == "rdma"}


def prepare(lab):
    lab_storage.install(lab)
    lab_storage.run(lab, "modprobe", "nvme-fabrics")
    (lab / "etc/nvme").mkdir(parents=True, exist_ok=True)
    (lab / "etc/nvme/hostnqn").write_text("nqn.2014-08.org.nvmexpress:uuid:0c1b6c2e-5d0e-4a6b-9f7e-1d2c3b4a5f60\n")


def test_only_the_planned_subsystem_is_connected(offered, section):
    prepare(offered)
    role_connects(offered, section)
    assert connected(offered, section) == {PLANNED}, "a subsystem the plan does not name was attached"


def test_the_boot_time_connection_is_scoped_too():
    """At boot nothing may run connect-all over a file of the role: the unit runs the connect script
    over the planned connections, and the role writes no discovery.conf."""
    tasks = (ROLE / "tasks" / "nvmeof.yml").read_text()
    argvs = [t.get("ansible.builtin.command", {}).get("argv") for t in yaml.safe_load(tasks)]
    assert not any(argv and "connect-all" in argv for argv in argvs), "the role runs nvme connect-all"
    written = [t["ansible.builtin.copy"]["dest"] for t in yaml.safe_load(tasks) if "ansible.builtin.copy" in t]
    assert "/etc/nvme/discovery.conf" not in written, "nvmf-autoconnect would connect-all at boot"
    unit = (ROLE / "templates" / "gpufabric-nvmeof-connect.service.j2").read_text()
    assert "ExecStart=/usr/local/sbin/gpufabric-nvmeof-connect" in unit and "connect-all\n" not in unit


def test_a_subsystem_connected_by_someone_else_is_reported_and_left(offered, section):
    prepare(offered)
    lab_storage.run(offered, "nvme", "connect", "-t", "rdma", "-a", "172.16.0.202", "-s", "4420", "-n", EXTRA)
    role_connects(offered, section)
    assert connected(offered, section) == {PLANNED, EXTRA}, "the role disconnected a subsystem it did not connect"
    result, _observed = lab_storage.readback(offered, {"storage_client": section})
    assert any(EXTRA in w and "not planned" in w for w in result.get("warnings") or []), result
    assert not any(EXTRA in p for p in result["problems"]), "a warning, not a failure of the run"
