"""The lab's storage simulators (modprobe, lnetctl, nvme, lab-mount, mmfs, gdscheck), run as processes on a
temporary lab root whose hardware is the dgx-h200-8x8@1 snapshot, and the read-back (storage_facts'
observe + _storage_readback.check) over what they leave: the node plan of the lab intent, carried out the
way storage_client carries it out, reads back clean; a restart (the hardware tree back to power-on) or a
wrong setting is named per filesystem."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from storage_support import REPO, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback
from ansible_collections.gpufabric.rollout.plugins.modules import storage_facts

SIMS = REPO / "lab" / "simulators"
LAB_DECLARATION = REPO / "molecule" / "storage" / "group_vars" / "all" / "lab.yml"
KERNEL = os.uname().release


def _snapshots():
    spec = importlib.util.spec_from_file_location("snapshots_build", REPO / "lab" / "snapshots" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SNAPSHOTS = _snapshots()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return Path(SNAPSHOTS.materialize("dgx-h200-8x8@1", str(tmp_path_factory.mktemp("snapshot"))))


@pytest.fixture
def lab(tmp_path, pristine):
    root = tmp_path / "root"
    shutil.copytree(pristine, root / "sysroot", symlinks=True)
    (root / "etc/gpufabric-lab").mkdir(parents=True)
    (root / "etc/gpufabric-lab/sysroot").write_text(f"{root / 'sysroot'}\n")
    (root / "etc/gpufabric-lab/nvidia-driver").write_text("open 580.95.05\n")
    declaration = yaml.safe_load(LAB_DECLARATION.read_text())["gpufabric_lab_storage"]
    (root / "etc/gpufabric-lab/storage.json").write_text(json.dumps(declaration))
    sbin = root / "usr/local/sbin"
    sbin.mkdir(parents=True)
    for tool in ("modprobe", "lab-mount", "lnetctl", "nvme", "mmfs"):
        (sbin / tool).write_text(f'#!/bin/sh\nexec {sys.executable} {SIMS / tool} "$@"\n')
        (sbin / tool).chmod(0o755)
    return root


def run(lab, tool, *args, check=True):
    env = dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab), GPUFABRIC_LAB_HOSTNAME="storage-node1")
    env["GPUFABRIC_LAB_REAL_NVME"] = str(lab / "usr/sbin/nvme")
    tool_path = str(lab / "usr/local/sbin" / tool)
    done = subprocess.run([tool_path, *args], capture_output=True, text=True, env=env, check=False)
    if check:
        assert done.returncode == 0, f"{tool} {' '.join(args)}: {done.stderr}"
    return done


def install(lab, doca=True, doca_storage=True, lustre=True, headers=True):
    """What the packages leave: DOCA-OFED and its storage DKMS builds, the Lustre client sources, kernel headers."""
    (lab / "usr/lib/gpufabric-lab").mkdir(parents=True, exist_ok=True)
    if doca:
        builds = ("mlnx-ofed-kernel", "mlnx-nfsrdma", "mlnx-nvme") if doca_storage else ("mlnx-ofed-kernel",)
        for dkms in builds:
            (lab / f"var/lib/dkms/{dkms}/24.10.OFED.24.10.1.1.4.1/{KERNEL}/x86_64/module").mkdir(parents=True)
        (lab / "usr/lib/gpufabric-lab/ofed-release").write_text("24.10-1.1.4\n")
    if lustre:
        (lab / "usr/src/lustre-client-modules-2.15.6").mkdir(parents=True)
    if headers:
        (lab / f"usr/src/linux-headers-{KERNEL}").mkdir(parents=True)


@pytest.fixture(scope="module")
def plan():
    from storage_support import PLAN

    specs = PLAN.load_specs(str(REPO))
    values, problems = PLAN.check(specs, "node", lab_variables())
    assert problems == []
    return _plan_node.plan_node(values, node_facts(1))


def carry_out(lab, section, nvme_multipath=True):
    """What storage_client does, with the lab's tools (the role's tasks in roles/storage_client/tasks)."""
    conf = lab / "etc/modprobe.d"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "gpufabric-storage.conf").write_text(
        f"options ko2iblnd tos={section['lnet']['o2ib_tos']}\n"
        f"options nvme_core multipath={'Y' if nvme_multipath else 'N'}\n"
    )
    for module in section["modules"]:
        run(lab, "modprobe", module)
    (lab / "etc/lnet.conf").write_text(section["lnet"]["conf"])
    run(lab, "modprobe", "lnet")
    run(lab, "lnetctl", "lnet", "configure")
    run(lab, "lnetctl", "import", str(lab / "etc/lnet.conf"))
    (lab / "etc/nvme").mkdir(parents=True)
    (lab / "etc/nvme/hostnqn").write_text("nqn.2014-08.org.nvmexpress:uuid:0c1b6c2e-5d0e-4a6b-9f7e-1d2c3b4a5f60\n")
    connect_nvme(lab, section)
    weka_agent = lab / "sysroot/run/gpufabric-lab/weka-agent"
    weka_agent.parent.mkdir(parents=True, exist_ok=True)
    weka_agent.touch()
    for fs in section["filesystems"]:
        mount = fs.get("mount")
        if mount:
            (lab / fs["mount_point"].lstrip("/")).mkdir(parents=True, exist_ok=True)
            kind = {"nfs": "nfs", "lustre": "lustre", "wekafs": "wekafs"}[mount["fstype"]]
            run(lab, "lab-mount", kind, mount["src"], fs["mount_point"], "-o", mount["fstab_options"])
    gpfs = section["gpfs"]
    run(
        lab,
        "mmfs",
        "mmchconfig",
        f"verbsRdma={gpfs['verbs_rdma']},verbsRdmaCm={gpfs['verbs_rdma_cm']},verbsPorts={gpfs['verbs_ports']},"
        f"verbsGPUDirectStorage={gpfs['verbs_gpudirect_storage']},autoload=yes",
        "-N",
        "storage-node1",
    )
    run(lab, "mmfs", "mmbuildgpl")
    run(lab, "mmfs", "mmstartup")


CONNECT = REPO / "roles" / "storage_client" / "files" / "gpufabric-nvmeof-connect"


def connect_nvme(lab, section, check=True):
    """storage_client's gpufabric-nvmeof-connect over the plan's connections file, with the lab's nvme and
    modprobe first in PATH (as systemd's PATH has /usr/local/sbin first); the plan's /etc/nvme/gpufabric
    paths (secret files) are under the lab root."""
    nvme = section["nvme"]
    conf = lab / nvme["conf_path"].lstrip("/")
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(nvme["conf"].replace(f" {nvme['dir']}/", f" {lab / nvme['dir'].lstrip('/')}/"))
    env = dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab), GPUFABRIC_LAB_HOSTNAME="storage-node1")
    env["GPUFABRIC_LAB_REAL_NVME"] = str(lab / "usr/sbin/nvme")
    env["PATH"] = f"{lab / 'usr/local/sbin'}:{env.get('PATH', '')}"
    done = subprocess.run(
        ["sh", str(CONNECT), str(conf), str(lab / "sysroot")], capture_output=True, text=True, env=env, check=False
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


class Runner:
    def __init__(self, lab):
        self.lab = lab

    def output(self, path, args):
        tool = os.path.basename(path)
        if tool.startswith("mm"):
            done = run(self.lab, "mmfs", tool, *args, check=False)
        else:
            done = run(self.lab, tool, *args, check=False)
        return done.stdout if done.returncode == 0 else None


def gdscheck(lab, plan):
    cufile = lab / "etc/cufile.json"
    gds = plan["gpudirect_storage"]
    cufile.write_text(
        json.dumps(
            {
                "properties": {"rdma_dev_addr_list": gds["rdma_dev_addr_list"], "allow_compat_mode": True},
                "fs": {k: v for k, v in gds["filesystems"].items() if v},
            }
        )
    )
    (lab / "usr/lib/gpufabric-lab/gds-release").write_text("1.15.1.6 2.12\n")
    (lab / "usr/src/nvidia-fs-2.26.6").mkdir(parents=True, exist_ok=True)
    run(lab, "modprobe", "nvidia-fs")
    env = dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab))
    done = subprocess.run(
        [sys.executable, str(SIMS / "gdscheck"), "-p"], capture_output=True, text=True, env=env, check=False
    )
    return _gdscheck.parse(done.stdout)


def readback(lab, plan, gds=None):
    section = plan["storage_client"]
    sysroot = str(lab / "sysroot")
    observed = storage_facts.observe(section, sysroot, gds, "storage-node1", "/usr/lpp/mmfs/bin", Runner(lab))
    return _storage_readback.check(section, observed), observed


def test_the_plan_carried_out_reads_back_clean(lab, plan):
    install(lab)
    carry_out(lab, plan["storage_client"])
    gds = gdscheck(lab, plan)
    assert {b: s["supported"] for b, s in gds["filesystems"].items()} == {
        "nfs": True,
        "lustre": True,
        "nvmeof": True,
        "weka": True,
        "gpfs": True,
        "beegfs": False,  # no BeeGFS filesystem in the lab intent: no beegfs module, no fs.beegfs addresses
    }
    result, observed = readback(lab, plan, gds)
    assert result["problems"] == []
    assert result["ok"] and set(result["filesystems"]) == {"datasets", "scratch", "blocks", "checkpoints", "models"}
    mounts = {m["target"]: m for m in observed["mounts"]}
    nfs = mounts["/mnt/datasets"]
    assert nfs["fstype"] == "nfs4" and nfs["options"]["proto"] == "rdma" and nfs["options"]["port"] == "20049"
    assert nfs["options"]["clientaddr"] == "172.16.0.1" and nfs["options"]["nconnect"] == "4"
    assert mounts["/mnt/scratch"]["source"] == "172.16.0.201@o2ib:/scratch"
    assert [(ni["nid"], ni["interfaces"]) for ni in observed["lnet"] if ni["net"] == "o2ib"] == [
        ("10.0.1.1@o2ib", ["enp24s0np0"]),
        ("10.1.1.1@o2ib", ["enp31s0np0"]),
    ]
    fabric = [c for c in observed["nvme"]["controllers"] if c["transport"] == "rdma"]
    paths = sorted((c["transport"], c["address"]["host_traddr"], c["state"]) for c in fabric)
    assert paths == [("rdma", "10.4.1.1", "live"), ("rdma", "172.16.0.1", "live")]
    assert observed["gpfs"]["config"]["verbsPorts"] == "mlx5_2/1" and observed["gpfs"]["state"] == "active"
    assert observed["modules"]["ko2iblnd"]["params"]["tos"] == "106"
    assert observed["modules"]["rpcrdma"]["version"] == "24.10.OFED.24.10.1.1.4.1", "DOCA's NFS-RDMA build"
    # A second carry-out changes nothing the read-back sees: the connect script skips connected paths.
    assert connect_nvme(lab, plan["storage_client"]).stdout == ""
    assert len([c for c in readback(lab, plan)[1]["nvme"]["controllers"] if c["transport"] == "rdma"]) == 2


def test_a_restart_loses_everything_and_the_readback_names_each_filesystem(lab, plan, pristine):
    install(lab)
    carry_out(lab, plan["storage_client"])
    # power-on state of the hardware tree, as the lab's hardware unit lays it down at boot
    shutil.rmtree(lab / "sysroot")
    shutil.copytree(pristine, lab / "sysroot", symlinks=True)
    result, _observed = readback(lab, plan)
    assert not result["ok"]
    text = "\n".join(result["problems"])
    assert "filesystem 'datasets' (nfs): /mnt/datasets is not mounted" in text
    assert "filesystem 'scratch' (lustre): LNet is not configured" in text
    nqn = "nqn.2026-01.io.gpufabric.lab:blocks"
    assert f"filesystem 'blocks' (nvmeof): no NVMe-oF controller of subsystem {nqn}" in text
    assert "filesystem 'models' (gpfs): the Scale daemon is down" in text
    assert "node: kernel module rpcrdma is not loaded" in text
    # the configuration on disk survives (Scale keeps its own): only the runtime state is gone
    assert "verbsPorts" not in text


def test_rdma_that_is_not_rdma_is_named(lab, plan):
    install(lab)
    section = json.loads(json.dumps(plan["storage_client"]))
    carry_out(lab, section, nvme_multipath=False)
    # the NFS export mounted over TCP instead (a hand-made fstab line, say)
    mounts = lab / "sysroot/proc/mounts"
    mounts.write_text(mounts.read_text().replace("proto=rdma", "proto=tcp"))
    result, _observed = readback(lab, plan)
    text = "\n".join(result["problems"])
    assert "filesystem 'datasets' (nfs): /mnt/datasets has proto=tcp, planned proto=rdma" in text
    assert "filesystem 'blocks' (nvmeof): nvme_core multipath is N, planned Y" in text


def test_gds_not_supported_is_named_per_filesystem(lab, plan):
    install(lab, doca_storage=False)
    carry_out(lab, plan["storage_client"])
    gds = gdscheck(lab, plan)
    result, _observed = readback(lab, plan, gds)
    text = "\n".join(result["problems"])
    # without DOCA-OFED's NFS-RDMA and NVMe-oF builds the inbox modules carry the data, and gdscheck says so
    assert "filesystem 'datasets' (nfs): GDS is planned but gdscheck -p reports NFS : Unsupported" in text
    assert "filesystem 'blocks' (nvmeof): GDS is planned but gdscheck -p reports NVMeOF : Unsupported" in text
    assert "'scratch'" not in text and "'checkpoints'" not in text


def test_tools_fail_like_the_real_ones(lab):
    # no Lustre client installed: the module is not there
    done = run(lab, "lnetctl", "lnet", "configure", check=False)
    assert done.returncode == 1 and "opening /dev/lnet failed: No such device" in done.stderr
    install(lab)
    run(lab, "lnetctl", "lnet", "configure")
    down = run(lab, "lnetctl", "net", "add", "--net", "o2ib", "--if", "enp170s0np0", check=False)
    assert down.returncode == 1 and "errno: -100" in down.stderr, "the unplugged storage NIC cannot carry o2ib"
    run(lab, "lnetctl", "net", "add", "--net", "o2ib0", "--if", "enp42s0np0")
    again = run(lab, "lnetctl", "net", "add", "--net", "o2ib", "--if", "enp42s0np0", check=False)
    assert again.returncode == 1 and "errno: -17" in again.stderr
    assert run(lab, "lnetctl", "net", "show").stdout == (
        "net:\n"
        "    - net type: lo\n"
        "      local NI(s):\n"
        "        - nid: 0@lo\n"
        "          status: up\n"
        "    - net type: o2ib\n"
        "      local NI(s):\n"
        "        - nid: 172.16.0.1@o2ib\n"
        "          status: up\n"
        "          interfaces:\n"
        "              0: enp42s0np0\n"
    )
    assert run(lab, "lnetctl", "export", "--backup").stdout == (
        "net:\n    - net type: o2ib\n      local NI(s):\n        - interfaces:\n              0: enp42s0np0\n"
    )
    (lab / "mnt/x").mkdir(parents=True)
    nfs = run(lab, "lab-mount", "nfs", "172.16.0.200:/export/other", "/mnt/x", "-o", "vers=4.1,proto=rdma", check=False)
    assert nfs.returncode == 32 and "access denied by server while mounting 172.16.0.200:/export/other" in nfs.stderr
    lustre = run(lab, "lab-mount", "lustre", "172.16.0.201@o2ib:/other", "/mnt/x", check=False)
    assert lustre.returncode == 32 and "Is the MGS running?" in lustre.stderr
    weka = run(lab, "lab-mount", "wekafs", "172.16.0.203/checkpoints", "/mnt/x", "-o", "net=enp58s0np0", check=False)
    assert weka.returncode == 32 and "weka agent is not running" in weka.stderr
    nvme = run(lab, "nvme", "connect-all", "-t", "rdma", "-a", "172.16.0.202", "-s", "4420", check=False)
    assert nvme.returncode == 1 and "Failed to open /dev/nvme-fabrics" in nvme.stderr
    run(lab, "modprobe", "nvme-fabrics")
    bad_host = run(lab, "nvme", "connect-all", "-t", "rdma", "-a", "172.16.0.202", "-w", "10.99.0.1", check=False)
    assert bad_host.returncode == 1 and "failed to write to nvme-fabrics device" in bad_host.stderr
    run(lab, "nvme", "connect-all", "-t", "rdma", "-a", "172.16.0.202", "-s", "4420", "-w", "172.16.0.1")
    listing = run(lab, "nvme", "list-subsys").stdout
    assert listing == (
        "nvme-subsys0 - NQN=nqn.2026-01.io.gpufabric.lab:blocks\n"
        "\\\n"
        " +- nvme4 rdma traddr=172.16.0.202,trsvcid=4420,host_traddr=172.16.0.1 live\n"
    )
    assert (lab / "sysroot/sys/block/nvme0n1/wwid").read_text() == "uuid.5f3c2d9e-8a41-4b6e-9c0d-1e2f3a4b5c6d\n"


def test_scale_commands(lab, monkeypatch):
    stranger = subprocess.run(
        [str(lab / "usr/local/sbin/mmfs"), "mmlsconfig"],
        capture_output=True,
        text=True,
        env=dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab), GPUFABRIC_LAB_HOSTNAME="elsewhere"),
        check=False,
    )
    assert stranger.returncode == 1 and "does not belong to a GPFS cluster" in stranger.stderr
    bad = run(lab, "mmfs", "mmchconfig", "verbsPorts=mlx5_99/1", "-N", "storage-node1", check=False)
    assert bad.returncode == 1 and "mlx5_99/1 does not exist" in bad.stderr
    unknown = run(lab, "mmfs", "mmchconfig", "key=value", "-N", "storage-node1", check=False)
    assert unknown.returncode == 1 and "key: not an attribute" in unknown.stderr
    run(lab, "mmfs", "mmchconfig", "verbsRdma=enable,verbsPorts=mlx5_2/1 mlx5_0/1", "-N", "storage-node1")
    shown = run(lab, "mmfs", "mmlsconfig", "verbsPorts,verbsRdma").stdout
    assert "verbsPorts mlx5_2/1 mlx5_0/1 [storage-node1]" in shown and "verbsRdma disable\n" in shown
    assert _storage_readback.parse_mmlsconfig(shown, "storage-node1")["verbsRdma"] == "enable"
    assert _storage_readback.parse_mmlsconfig(shown, "other")["verbsRdma"] == "disable"
    no_gpl = run(lab, "mmfs", "mmstartup", check=False)
    assert no_gpl.returncode == 1 and "portability layer is not built" in no_gpl.stderr
    assert run(lab, "mmfs", "mmbuildgpl", check=False).returncode == 1, "no kernel headers"
    install(lab, doca=False, lustre=False)
    run(lab, "mmfs", "mmbuildgpl")
    (lab / "gpfs").mkdir()
    run(lab, "mmfs", "mmstartup")
    assert _storage_readback.parse_mmgetstate(run(lab, "mmfs", "mmgetstate").stdout, "storage-node1") == "active"
    assert "models /gpfs/models gpfs rw,relatime 0 0" in (lab / "sysroot/proc/mounts").read_text()
    run(lab, "mmfs", "mmshutdown")
    assert "gpfs" not in (lab / "sysroot/proc/mounts").read_text()
    # at boot the daemon starts only with autoload yes
    run(lab, "mmfs", "mmstartup", "--lab-boot")
    assert _storage_readback.parse_mmgetstate(run(lab, "mmfs", "mmgetstate").stdout, "storage-node1") == "down"


def test_modprobe_applies_modprobe_d_options_and_doca_builds(lab):
    (lab / "etc/modprobe.d").mkdir(parents=True)
    (lab / "etc/modprobe.d/x.conf").write_text("options nvme_core multipath=N\noptions ko2iblnd tos=106 # fabric\n")
    run(lab, "modprobe", "nvme-rdma")
    params = lab / "sysroot/sys/module"
    assert (params / "nvme_core/parameters/multipath").read_text() == "N\n"
    assert (params / "nvme_fabrics").is_dir() and not (params / "nvme_rdma/version").exists(), "inbox build"
    run(lab, "modprobe", "xprtrdma")
    assert (params / "rpcrdma").is_dir(), "xprtrdma is an alias of rpcrdma"
    missing = run(lab, "modprobe", "ko2iblnd", check=False)
    assert missing.returncode == 1 and "Module ko2iblnd not found" in missing.stderr
    install(lab)
    run(lab, "modprobe", "ko2iblnd")
    assert (params / "ko2iblnd/parameters/tos").read_text() == "106\n"
    assert (params / "lnet").is_dir(), "ko2iblnd pulls in lnet"
    run(lab, "modprobe", "-r", "rpcrdma")
    run(lab, "modprobe", "rpcrdma")
    assert (params / "rpcrdma/version").read_text() == "24.10.OFED.24.10.1.1.4.1\n", "DOCA-OFED's mlnx-nfsrdma"


def test_helpers_mounting_at_once_keep_every_line(lab):
    """At boot systemd runs the fstab mounts and the clients' services side by side. Each lab-mount
    rewrites <sysroot>/proc/mounts; before the lock, one helper's rewrite dropped the line another had
    just added, and a filesystem that was mounted read back as not mounted (seen in the storage
    scenario's verify after a restart)."""
    env = dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab), GPUFABRIC_LAB_HOSTNAME="storage-node1")
    (lab / "sysroot/run/gpufabric-lab").mkdir(parents=True, exist_ok=True)
    (lab / "sysroot/run/gpufabric-lab/weka-agent").touch()
    targets = [f"/mnt/w{i:02d}" for i in range(24)]
    for target in targets:
        (lab / target.lstrip("/")).mkdir(parents=True)
    tool = str(lab / "usr/local/sbin/lab-mount")
    procs = [
        subprocess.Popen(
            [tool, "wekafs", "172.16.0.203/checkpoints", t],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for t in targets
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    recorded = [line.split()[1] for line in (lab / "sysroot/proc/mounts").read_text().splitlines() if "wekafs" in line]
    assert sorted(recorded) == targets
