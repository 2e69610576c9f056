"""BeeGFS, the sixth backend, through the storage seam (module_utils/storage/beegfs.py): its intent rules, the
node plan (client configuration per filesystem, beegfs mount, cuFile fs.beegfs), the CSI objects of
beegfs-csi-driver (validated as core kinds) and the read-back of its mount."""

from __future__ import annotations

import copy

import pytest
from kubernetes_support import validate_core
from storage_support import CSI_VARS, PLAN, UNIT, cluster_plan, lab_variables, node_facts, storage_intent

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import storage as _intent_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _readback

BEEGFS = {
    "name": "hot",
    "backend": "beegfs",
    "servers": ["172.16.0.206"],
    "export": "/k8s/gpufabric",
    "mount_point": "/mnt/beegfs",
    "nics": ["enp42s0np0"],
    "beegfs": {"client_config": {"connMaxInternodeNum": 12}},
}
SOURCE = {
    "storage_client_beegfs_repo_url": "https://repo.example.com/beegfs",
    "storage_client_beegfs_repo_key_fingerprints": [PLAN.LAB_KEY_FINGERPRINT],
}
DRIVER = {"beegfs": {"manifest": "/opt/beegfs-csi-driver/beegfs-csi.yaml"}}


def storage(*extra, with_lab=True):
    items = copy.deepcopy(storage_intent()["gpufabric_storage"]) if with_lab else []
    return [*items, *copy.deepcopy(list(extra))]


def problems_of(check, fs, **changes):
    values, problems = check("node", lab_variables(gpufabric_storage=storage(fs, with_lab=False), **changes))
    if problems:
        return problems
    out = []
    _intent_storage.storage_rules(values, out)
    return out


def plan_of(check, node=1, fs=None, **changes):
    values, problems = check("node", lab_variables(gpufabric_storage=storage(fs or BEEGFS), **{**SOURCE, **changes}))
    assert problems == []
    return _plan_node.plan_node(values, node_facts(node))


def test_the_lab_intent_with_beegfs_is_valid(check):
    assert problems_of(check, BEEGFS) == []


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"servers": []}, "gpufabric_storage[0].servers: filesystem 'hot' (beegfs) needs exactly one address"),
        ({"servers": ["a", "b"]}, "needs exactly one address: the host of its management service (sysMgmtdHost)"),
        (
            {"servers": ["bad host"]},
            "gpufabric_storage[0].servers[0]: 'bad host' is not an IPv4 address or a host name",
        ),
        ({"export": "k8s"}, "gpufabric_storage[0].export: 'k8s' is not a normalised absolute directory"),
        ({"export": "/"}, "gpufabric_storage[0].export: '/' is not a normalised absolute directory"),
        ({"export": None}, "gpufabric_storage[0].export: is required: the BeeGFS directory"),
        ({"mount_options": ["cfgFile=/tmp/x"]}, "gpufabric_storage[0].mount_options[0]: 'cfgFile=/tmp/x' is set by"),
        (
            {"beegfs": {"client_config": {"sysMgmtdHost": "x"}}},
            "gpufabric_storage[0].beegfs.client_config.sysMgmtdHost: is set by the plan from servers",
        ),
        (
            {"beegfs": {"client_config": {"conn use": 1}}},
            "gpufabric_storage[0].beegfs.client_config: 'conn use' is not a beegfs-client.conf setting name",
        ),
        (
            {"beegfs": {"client_config": {"connMaxInternodeNum": "1\nsysMgmtdHost = evil"}}},
            "gpufabric_storage[0].beegfs.client_config.connMaxInternodeNum: ",
        ),
        ({"transport": "tcp", "gds": True}, "GPUDirect Storage needs RDMA"),
    ],
)
def test_bad_beegfs_intent_is_refused(check, change, expect):
    problems = problems_of(check, {**BEEGFS, **change})
    assert any(expect in p for p in problems), problems


def test_a_beegfs_section_on_another_backend_is_refused():
    given = {"gpufabric_storage": [{"name": "d", "backend": "nfs", "beegfs": {"client_config": {}}}]}
    problems = []
    _intent_storage.storage_given_rules(given, given, problems)
    assert problems and problems[0].startswith("gpufabric_storage[0].beegfs: filesystem 'd' (nfs) carries a 'beegfs'")


def test_node_plan(check):
    section = plan_of(check, 2)["storage_client"]
    fs = {f["name"]: f for f in section["filesystems"]}["hot"]
    assert section["backends"][-1] == "beegfs" and "beegfs" in section["modules"]
    assert fs["gds"] and fs["addresses"] == ["172.16.0.2"]
    conf = "/etc/beegfs/gpufabric-hot-client.conf"
    assert fs["mount"]["src"] == "beegfs_nodev" and fs["mount"]["fstype"] == "beegfs"
    assert fs["mount"]["fstab_options"] == (
        f"cfgFile={conf},nosuid,nodev,_netdev,x-systemd.after=beegfs-helperd.service"
    )
    assert fs["mount"]["expect_options"] == {"cfgFile": conf}
    assert fs["beegfs"]["conf_path"] == conf
    assert fs["beegfs"]["conf"].splitlines()[1:] == [
        "sysMgmtdHost = 172.16.0.206",
        "connMgmtdPort = 8008",
        "connUseRDMA = true",
        "connInterfacesFile = /etc/beegfs/gpufabric-hot-interfaces",
        "connMaxInternodeNum = 12",
    ]
    assert fs["beegfs"]["interfaces"] == "enp42s0np0\n"
    # cuFile: fs.beegfs with the NIC that serves it, and its mount point
    assert section["cufile"]["beegfs"] == {
        "rdma_dev_addr_list": ["172.16.0.2"],
        "mount_table": {"/mnt/beegfs": {"rdma_dev_addr_list": ["172.16.0.2"]}},
    }


def test_tcp_turns_rdma_off_and_gds_off(check):
    fs = {**BEEGFS, "transport": "tcp", "port": 9008}
    entry = {f["name"]: f for f in plan_of(check, fs=fs)["storage_client"]["filesystems"]}["hot"]
    assert "connUseRDMA = false" in entry["beegfs"]["conf"] and "connMgmtdPort = 9008" in entry["beegfs"]["conf"]
    assert not entry["gds"]


def test_the_client_source_is_required(check):
    values, problems = check("node", lab_variables(gpufabric_storage=storage(BEEGFS)))
    assert problems == []
    with pytest.raises(_plan_node.PlanError, match="storage_client_beegfs_repo_url: is empty"):
        _plan_node.plan_node(values, node_facts(1))
    values, problems = check("node", lab_variables(gpufabric_storage=storage(BEEGFS), **SOURCE))
    values["storage_client_beegfs_repo_key_fingerprints"] = []
    with pytest.raises(_plan_node.PlanError, match="storage_client_beegfs_repo_key_fingerprints: is empty"):
        _plan_node.plan_node(values, node_facts(1))


@pytest.mark.parametrize("pods", ["storageclass", "static_pv"])
def test_csi_objects(check, pods):
    fs = {**BEEGFS, "pods": pods}
    changes = {"gpufabric_storage": storage(fs), **SOURCE}
    plan = cluster_plan(
        check, {**changes, "storage_csi_drivers": {**CSI_VARS["storage_csi_drivers"], **DRIVER}}, changes
    )
    csi = plan["storage"]
    assert csi["drivers"]["beegfs"]["driver"] == "beegfs.csi.netapp.com"
    assert csi["drivers"]["beegfs"]["kind"] == "manifest"
    assert list(csi["drivers"])[-1] == "beegfs"
    mine = [o for part in csi["objects"].values() for o in part if o["metadata"]["name"] == "gpufabric-hot"]
    for obj in mine:
        validate_core(obj)
    if pods == "storageclass":
        (sc,) = mine
        assert sc["provisioner"] == "beegfs.csi.netapp.com"
        assert sc["parameters"] == {"sysMgmtdHost": "172.16.0.206", "volDirBasePath": "k8s/gpufabric"}
        assert sc["allowVolumeExpansion"] is False
    else:
        pv = next(o for o in mine if o["kind"] == "PersistentVolume")
        assert pv["spec"]["csi"] == {
            "driver": "beegfs.csi.netapp.com",
            "volumeHandle": "beegfs://172.16.0.206/k8s/gpufabric",
        }
        assert pv["spec"]["accessModes"] == ["ReadWriteMany"] and "mountOptions" not in pv["spec"]


def test_csi_driver_needs_its_manifest(check):
    changes = {"gpufabric_storage": storage(BEEGFS), **SOURCE}
    with pytest.raises(_plan_node.PlanError, match=r"storage_csi_drivers\.beegfs\.manifest: is required"):
        cluster_plan(check, changes, changes)
    values, _problems = check("cluster", lab_variables(**CSI_VARS, **changes))
    assert values["storage_csi_drivers"]["beegfs"]["manifest"] == ""


def test_readback_of_the_mount(check):
    section = plan_of(check, 1)["storage_client"]
    conf = "/etc/beegfs/gpufabric-hot-client.conf"
    line = f"beegfs_nodev /mnt/beegfs beegfs rw,nosuid,nodev,relatime,cfgFile={conf} 0 0\n"
    hot = {"filesystems": [f for f in section["filesystems"] if f["name"] == "hot"]}
    ok = _readback.check(hot, {"mounts": _readback.parse_mounts(line)})
    assert ok["ok"], ok["problems"]
    wrong = _readback.check(hot, {"mounts": _readback.parse_mounts(line.replace(conf, "/etc/beegfs/other.conf"))})
    assert wrong["problems"] == [
        f"filesystem 'hot' (beegfs): /mnt/beegfs has cfgFile=/etc/beegfs/other.conf, planned cfgFile={conf}"
    ]
    gone = _readback.check(hot, {"mounts": []})
    assert gone["problems"] == ["filesystem 'hot' (beegfs): /mnt/beegfs is not mounted"]


def test_gdscheck_reports_beegfs():
    text = (UNIT / "gds" / "fixtures" / "gdscheck" / "gds-mode-list-layout.txt").read_text()
    support = _gdscheck.filesystem_support(_gdscheck.parse(text))["beegfs"]
    assert support == {"label": "BeeGFS", "supported": False, "modes": ["compat"]}
