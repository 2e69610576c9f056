"""The lab's BeeGFS stand-in (lab/simulators/lab-mount beegfs, the modprobe shim's beegfs module, gdscheck's
BeeGFS line) on a temporary lab root of the dgx-h200-8x8@1 snapshot: the node plan of a BeeGFS filesystem,
carried out the way storage_client carries it out, reads back clean; a restart, a management service the lab
does not have and a missing client are named."""

from __future__ import annotations

import json
import shutil

import pytest
import test_lab_storage as lab_storage
from storage_support import PLAN, REPO, lab_variables, node_facts
from test_beegfs import BEEGFS, SOURCE, storage

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback
from ansible_collections.gpufabric.rollout.plugins.modules import storage_facts

MGMTD = BEEGFS["servers"][0]
lab = lab_storage.lab
pristine = lab_storage.pristine


@pytest.fixture(scope="module")
def plan():
    specs = PLAN.load_specs(str(REPO))
    values, problems = PLAN.check(specs, "node", lab_variables(gpufabric_storage=storage(BEEGFS), **SOURCE))
    assert problems == []
    return _plan_node.plan_node(values, node_facts(1))


def hot_section(plan):
    """The storage section of the BeeGFS filesystem alone (the others are test_lab_storage's)."""
    section = plan["storage_client"]
    return {**section, "filesystems": [f for f in section["filesystems"] if f["name"] == "hot"], "modules": ["beegfs"]}


def declare(root, mgmtd=MGMTD):
    path = root / "etc/gpufabric-lab/storage.json"
    declared = json.loads(path.read_text())
    declared["beegfs"] = [{"mgmtd": mgmtd}]
    path.write_text(json.dumps(declared))


def carry_out(root, section, client=True, check=True):
    """What storage_client does for BeeGFS: the package, the client configuration and NICs, the mount."""
    if client:
        (root / "usr/src/beegfs-7.4.6").mkdir(parents=True, exist_ok=True)
    fs = section["filesystems"][0]
    for path, text in (
        (fs["beegfs"]["conf_path"], fs["beegfs"]["conf"]),
        (fs["beegfs"]["interfaces_path"], fs["beegfs"]["interfaces"]),
    ):
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (root / fs["mount_point"].lstrip("/")).mkdir(parents=True, exist_ok=True)
    mount = fs["mount"]
    return lab_storage.run(
        root, "lab-mount", "beegfs", mount["src"], fs["mount_point"], "-o", mount["fstab_options"], check=check
    )


def readback(root, section):
    observed = storage_facts.observe(
        section, str(root / "sysroot"), None, "storage-node1", "/usr/lpp/mmfs/bin", lab_storage.Runner(root)
    )
    return _storage_readback.check(section, observed), observed


def test_beegfs_carried_out_reads_back_clean(lab, plan):
    declare(lab)
    section = hot_section(plan)
    carry_out(lab, section)
    result, observed = readback(lab, section)
    assert result["problems"] == [] and result["ok"]
    (mount,) = [m for m in observed["mounts"] if m["fstype"] == "beegfs"]
    assert mount["source"] == "beegfs_nodev" and mount["target"] == "/mnt/beegfs"
    assert mount["options"]["cfgFile"] == "/etc/beegfs/gpufabric-hot-client.conf"
    assert {"nosuid", "nodev"} <= set(mount["option_list"])


def test_gdscheck_reports_beegfs_once_its_client_runs(lab, plan):
    lab_storage.install(lab)
    declare(lab)
    carry_out(lab, hot_section(plan))
    gds = lab_storage.gdscheck(lab, plan)
    assert gds["filesystems"]["beegfs"]["supported"] is True


def test_a_restart_loses_the_mount_and_the_module(lab, plan, pristine):
    declare(lab)
    section = hot_section(plan)
    carry_out(lab, section)
    shutil.rmtree(lab / "sysroot")
    shutil.copytree(pristine, lab / "sysroot", symlinks=True)
    result, _observed = readback(lab, section)
    assert result["problems"] == [
        "node: kernel module beegfs is not loaded",
        "filesystem 'hot' (beegfs): /mnt/beegfs is not mounted",
    ]
    # what storage_client left on disk brings it back: the same mount again
    carry_out(lab, section)
    assert readback(lab, section)[0]["ok"]


def test_no_client_or_an_unknown_management_service_fails_the_mount(lab, plan):
    section = hot_section(plan)
    declare(lab)
    done = carry_out(lab, section, client=False, check=False)
    assert done.returncode == 32 and "unknown filesystem type 'beegfs'" in done.stderr
    declare(lab, mgmtd="172.16.0.250")
    done = carry_out(lab, section, check=False)
    assert done.returncode == 32 and f"the management service {MGMTD} does not answer" in done.stderr
