"""doca_stack.read() (what doca_ofed_facts and plan_facts run) over small sysfs trees (layout:
/sys/module/<name>/, /sys/class/infiniband/<dev>) with ofed_info / dkms output replayed from fixtures/."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot

FIXTURES = Path(__file__).parent / "fixtures"


def fake_runner(outputs):
    """A Runner whose tools print ``outputs[name]`` (rc 0), or fail (rc 1) when that is None."""
    calls = []

    def run(argv):
        name = Path(argv[0]).name
        calls.append([name, *argv[1:]])
        out = outputs.get(name)
        return (1, "", "failed") if out is None else (0, out, "")

    return Runner(run=run, which=lambda name: f"/usr/bin/{name}"), calls


def _tree(root: Path, modules=(), ib_devices=(), mlx5_version=None):
    for name in modules:
        (root / "sys/module" / name).mkdir(parents=True, exist_ok=True)
    for dev in ib_devices:
        (root / "sys/class/infiniband" / dev).mkdir(parents=True, exist_ok=True)
    if mlx5_version:
        (root / "sys/module/mlx5_core").mkdir(parents=True, exist_ok=True)
        (root / "sys/module/mlx5_core/version").write_text(mlx5_version + "\n")
    return str(root)


@pytest.mark.parametrize(
    ("tree", "ofed_info", "installed", "kind", "loaded", "loaded_release"),
    [
        ({}, None, {}, "none", "none", None),
        ({"ib_devices": ["mlx5_0", "mlx5_1"]}, None, {}, "inbox", "inbox", None),
        ({"modules": ["ib_core", "mlx5_core"]}, None, {"ibverbs-utils": "44.0-2"}, "inbox", "inbox", None),
        (
            {"modules": ["ib_core", "mlx_compat"], "mlx5_version": "24.10-1.1.4"},
            "doca-2.9.1.txt",
            {"doca-ofed": "2.9.1-0.1.4", "mlnx-ofed-kernel-dkms": "24.10.OFED.24.10.1.1.4.1-1"},
            "doca_ofed",
            "ofed",
            "24.10-1.1.4",
        ),
        (
            {"modules": ["ib_core", "mlx_compat"], "mlx5_version": "23.07-0.5.1"},
            "mlnx-ofed-23.07.txt",
            {"mlnx-ofed-kernel-dkms": "23.07.OFED.23.07.0.5.1.1-1"},
            "mlnx_ofed",
            "ofed",
            "23.07-0.5.1",
        ),
    ],
)
def test_gather(tmp_path, tree, ofed_info, installed, kind, loaded, loaded_release):
    runner, calls = fake_runner(
        {
            "ofed_info": (FIXTURES / "ofed_info" / ofed_info).read_text() if ofed_info else None,
            "dkms": (FIXTURES / "dkms" / "dkms3.txt").read_text(),
        }
    )
    facts = doca_stack.read(Sysroot(_tree(tmp_path, **tree)), installed, runner)
    assert (facts["kind"], facts["loaded"], facts["loaded_release"]) == (kind, loaded, loaded_release)
    assert ["ofed_info", "-s"] in calls and ["dkms", "status"] in calls
    assert [e["module"] for e in facts["dkms"]] == ["mlnx-nfsrdma", "mlnx-ofed-kernel", "nvidia"]
    assert facts["modules"]["rdma_devices"] == sorted(tree.get("ib_devices", []))


def test_gather_reads_garbage_leniently(tmp_path):
    """ofed_info and dkms output that is not recognised leaves facts unknown; it never fails."""
    runner, _calls = fake_runner({"ofed_info": "\x00\ufffd garbage: 12\n", "dkms": "Error! no dkms.conf: x\n,,:\n"})
    root = _tree(tmp_path, modules=["ib_core"], mlx5_version="\ufffd\n")
    facts = doca_stack.read(Sysroot(root), {"mlnx-ofed-kernel-dkms": "not a version"}, runner)
    assert facts["ofed_info"] is None and facts["dkms"] == []
    assert (facts["kind"], facts["installed_release"], facts["loaded"]) == ("mlnx_ofed", None, "inbox")


def test_gather_reads_sysfs_through_the_sysroot(tmp_path):
    """Absolute links in a captured tree resolve inside the sysroot, not on the controller."""
    root = Path(_tree(tmp_path / "root", modules=["mlx_compat"], mlx5_version="24.10-1.1.4"))
    (root / "sys/class/infiniband").mkdir(parents=True)
    (root / "sys/devices/mlx5_0").mkdir(parents=True)
    (root / "sys/class/infiniband/mlx5_0").symlink_to("/sys/devices/mlx5_0")
    runner, _calls = fake_runner({})
    facts = doca_stack.read(Sysroot(str(root)), {}, runner)
    assert facts["modules"]["rdma_devices"] == ["mlx5_0"]
    assert (facts["loaded"], facts["loaded_release"]) == ("ofed", "24.10-1.1.4")
