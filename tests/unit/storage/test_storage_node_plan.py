"""The node's storage plan (_plan_storage via _plan_node.plan_node) on the lab's storage intent and the
dgx-h200-8x8 discovery of nodes 1 and 2: NICs per filesystem, host client settings, cuFile sections."""

from __future__ import annotations

import pytest
from storage_support import lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage as _plan_storage


def plan_of(check, node: int = 1, **changes):
    values, problems = check("node", lab_variables(**changes))
    assert problems == []
    return _plan_node.plan_node(values, node_facts(node))


def by_name(section):
    return {fs["name"]: fs for fs in section["filesystems"]}


@pytest.mark.parametrize("node", [1, 2])
def test_each_filesystem_gets_its_nics(check, node):
    fss = by_name(plan_of(check, node)["storage_client"])
    # default: the storage NIC with a RoCE v2 address (the second storage NIC of the snapshot is unplugged)
    assert [n["netdev"] for n in fss["datasets"]["nics"]] == ["enp42s0np0"]
    assert fss["datasets"]["addresses"] == [f"172.16.0.{node}"]
    assert fss["models"]["addresses"] == [f"172.16.0.{node}"]
    # named by netdev (rails 0 and 1) and by RDMA device (mlx5_3 = rail 2, mlx5_4 = rail 3)
    assert fss["scratch"]["addresses"] == [f"10.0.{node}.1", f"10.1.{node}.1"]
    assert [n["netdev"] for n in fss["checkpoints"]["nics"]] == ["enp58s0np0", "enp65s0np0"]
    assert fss["checkpoints"]["addresses"] == [f"10.2.{node}.1", f"10.3.{node}.1"]
    assert fss["blocks"]["addresses"] == [f"172.16.0.{node}", f"10.4.{node}.1"]
    assert all(fs["gds"] for fs in fss.values())


def test_host_clients(check):
    section = plan_of(check, 2)["storage_client"]
    fss = by_name(section)
    assert section["backends"] == ["nfs", "lustre", "nvmeof", "weka", "gpfs"]
    assert section["modules"] == ["rpcrdma", "lnet", "ko2iblnd", "nvme-fabrics", "nvme-rdma"]
    nfs = fss["datasets"]["mount"]
    assert nfs["src"] == "172.16.0.200:/export/datasets"
    assert nfs["fstab_options"] == "vers=4.1,proto=rdma,port=20049,nconnect=4,nosuid,nodev,_netdev"
    assert nfs["expect_fstype"] == "nfs4"
    assert nfs["expect_options"] == {"proto": "rdma", "port": "20049", "vers": "4.1", "nconnect": "4"}
    lustre = fss["scratch"]["mount"]
    assert lustre["src"] == "172.16.0.201@o2ib:/scratch"
    assert lustre["fstab_options"].startswith("flock,nosuid,nodev,_netdev,x-systemd.requires=lnet.service")
    assert section["lnet"]["networks"] == [
        {"net": "o2ib", "interfaces": ["enp24s0np0", "enp31s0np0"], "nids": ["10.0.2.1@o2ib", "10.1.2.1@o2ib"]}
    ]
    assert section["lnet"]["conf"] == (
        "net:\n"
        "    - net type: o2ib\n"
        "      local NI(s):\n"
        "        - interfaces:\n"
        "              0: enp24s0np0\n"
        "        - interfaces:\n"
        "              0: enp31s0np0\n"
    )
    assert section["lnet"]["o2ib_tos"] == 106, "ko2iblnd takes the fabric's RoCE ToS"
    nqn = "nqn.2026-01.io.gpufabric.lab:blocks"
    no_secrets = {"dhchap_secret": None, "dhchap_ctrl_secret": None}
    assert section["nvme"]["connections"] == [
        {
            "name": "blocks",
            "nqn": nqn,
            "transport": "rdma",
            "traddr": "172.16.0.202",
            "trsvcid": "4420",
            "host_traddr": host,
            "dhchap_files": no_secrets,
        }
        for host in ("172.16.0.2", "10.4.2.1")
    ]
    assert section["nvme"]["conf"].splitlines()[1:] == [
        f"{nqn} rdma 172.16.0.202 4420 172.16.0.2 - -",
        f"{nqn} rdma 172.16.0.202 4420 10.4.2.1 - -",
    ]
    assert section["nvme"]["secret_files"] == [] and section["nvme"]["multipath"] is True
    assert fss["blocks"]["mount"] is None
    weka = fss["checkpoints"]["mount"]
    assert weka["src"] == "172.16.0.203,172.16.0.204/checkpoints"
    assert weka["options"] == ["net=enp58s0np0", "net=enp65s0np0", "num_cores=1"]
    assert "x-systemd.requires=weka-agent.service" in weka["fstab_options"]
    assert section["gpfs"] == {
        "verbs_rdma": "enable",
        "verbs_rdma_cm": "enable",
        "verbs_ports": "mlx5_2/1",
        "verbs_gpudirect_storage": "enable",
        "devices": ["models"],
    }


def test_cufile_sections_list_exactly_the_nics_of_each_mount(check):
    plan = plan_of(check, 1)
    gds = plan["gpudirect_storage"]
    assert gds["filesystems"]["nfs"] == {
        "rdma_dev_addr_list": ["172.16.0.1"],
        "mount_table": {"/mnt/datasets": {"rdma_dev_addr_list": ["172.16.0.1"]}},
    }
    assert gds["filesystems"]["lustre"]["mount_table"] == {
        "/mnt/scratch": {"rdma_dev_addr_list": ["10.0.1.1", "10.1.1.1"]}
    }
    assert gds["filesystems"]["weka"]["rdma_dev_addr_list"] == ["10.2.1.1", "10.3.1.1"]
    assert gds["filesystems"]["gpfs"]["mount_table"] == {"/gpfs/models": {"rdma_dev_addr_list": ["172.16.0.1"]}}
    assert "nvmeof" not in gds["filesystems"], "NVMe-oF is a block device: no cuFile fs section"
    # the client addresses cuFile uses: the NICs of the GDS filesystems, in order, once each
    assert gds["rdma_dev_addr_list"] == ["172.16.0.1", "10.0.1.1", "10.1.1.1", "10.4.1.1", "10.2.1.1", "10.3.1.1"]


def test_other_keys_of_a_planned_section_still_come_from_the_role(check):
    gds = plan_of(check, 1, gpudirect_storage_filesystems={"gpfs": {"gds_write_support": True}})["gpudirect_storage"]
    assert gds["filesystems"]["gpfs"]["gds_write_support"] is True
    assert gds["filesystems"]["gpfs"]["rdma_dev_addr_list"] == ["172.16.0.1"]


def test_gds_left_off_is_a_note_not_a_refusal(check):
    # without the DOCA storage components nvidia-fs cannot serve NFS or NVMe-oF: an implicit gds turns off
    plan = plan_of(check, 1, doca_ofed_storage_components=[])
    fss = by_name(plan["storage_client"])
    assert not fss["datasets"]["gds"] and not fss["blocks"]["gds"]
    assert fss["scratch"]["gds"] and fss["checkpoints"]["gds"]
    notes = plan["storage_client"]["notes"]
    assert any(n.startswith("GDS off on datasets:") and "mlnx-nfsrdma" in n for n in notes)
    assert "nfs" not in plan["gpudirect_storage"]["filesystems"] or not plan["gpudirect_storage"]["filesystems"][
        "nfs"
    ].get("rdma_dev_addr_list")


def test_installed_doca_component_counts(check):
    values, problems = check("node", lab_variables(doca_ofed_storage_components=[], gpufabric_doca_ofed_enabled=False))
    assert problems == []
    facts = node_facts(1)
    facts["doca"] = {
        "kind": "doca",
        "dkms": [{"module": "mlnx-nfsrdma", "version": "24.10", "state": "installed"}],
    }
    fss = by_name(_plan_node.plan_node(values, facts)["storage_client"])
    assert fss["datasets"]["gds"] is True
    assert fss["blocks"]["gds"] is False


def test_gds_disabled_plans_no_cufile_but_keeps_the_clients(check):
    plan = plan_of(check, 1, gpufabric_gds_enabled=False)
    assert plan["gpudirect_storage"] is None
    section = plan["storage_client"]
    assert section["cufile"] == {} and not any(fs["gds"] for fs in section["filesystems"])
    assert section["notes"] == [], "GDS switched off for the whole node is not news per filesystem"


def test_tcp_transport_needs_no_rdma_nic(check):
    intent = lab_variables()["gpufabric_storage"]
    nfs = dict(intent[0], transport="tcp", gds=None, nics=["enp170s0np0"])
    values, problems = check("node", lab_variables(gpufabric_storage=[nfs]))
    assert problems == []
    fs = _plan_node.plan_node(values, node_facts(1))["storage_client"]["filesystems"][0]
    assert fs["nics"][0]["netdev"] == "enp170s0np0" and fs["gds"] is False
    assert fs["mount"]["fstab_options"].startswith("vers=4.1,proto=tcp,port=2049")


def test_record_is_the_same_on_every_node(check):
    records = [_plan_storage.record(plan_of(check, n)["storage_client"]) for n in (1, 2)]
    assert records[0] == records[1], "only the NICs may differ per node, and they are not in the record"
    names = [fs["name"] for fs in records[0]]
    assert names == ["datasets", "scratch", "blocks", "checkpoints", "models"]
    nfs = records[0][0]
    assert nfs["mount_options"] == ["vers=4.1", "proto=rdma", "port=20049", "nconnect=4"]
    assert nfs["k8s"]["storage_class"] == "gpufabric-datasets" and nfs["k8s"]["reclaim_policy"] == "Delete"
    assert records[0][1]["lustre"] == {"nids": ["172.16.0.201@o2ib"]}
    assert records[0][2]["pods"] == "static_pv" and records[0][2]["k8s"]["reclaim_policy"] == "Retain"


def test_node_record_carries_storage(check):
    plan = plan_of(check, 1)
    record = _node_records.node_record(plan, node_facts(1)["topology"])
    assert record["record_version"] == _node_records.RECORD_VERSION
    assert [fs["backend"] for fs in record["storage"]] == ["nfs", "lustre", "nvmeof", "weka", "gpfs"]


def test_no_storage_intent_plans_nothing(check):
    values, problems = check("node", lab_variables(gpufabric_storage=[]))
    assert problems == []
    plan = _plan_node.plan_node(values, node_facts(1))
    assert plan["storage_client"] is None
    assert _node_records.node_record(plan, node_facts(1)["topology"])["storage"] == []
