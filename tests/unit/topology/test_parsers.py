"""Parsers of sysfs values, PCI config space, nvidia-smi matrices, and the rail matching."""

from __future__ import annotations

import os
import struct
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import rails as R
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import PATH_CLASSES
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import topology as P

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def cases(name):
    with open(HERE / "cases" / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


VALUES = cases("values.yml")


@pytest.mark.parametrize("func", sorted(VALUES))
def test_value_parsers(func):
    fn = getattr(P, func)
    for text, want in VALUES[func]:
        assert fn(text) == want, text


RAILS = cases("rails.yml")


@pytest.mark.parametrize("case", RAILS, ids=[c["name"] for c in RAILS])
def test_plan_rails(case):
    got = R.plan_rails(case["classes"])
    assert got == case["want"]
    if case["classes"]:
        nics = len(case["classes"][0])
        cap = -(-len(case["classes"]) // nics)
        assert all(got.count(j) <= cap for j in set(got))
    if "nearest" in case:
        nearest = [min(range(len(r)), key=lambda j, r=r: PATH_CLASSES.index(r[j])) for r in case["classes"]]
        assert nearest == case["nearest"]
        assert got != nearest


def test_assign_is_optimal_on_small_matrices():
    import itertools

    matrix = [[7, 3, 9, 4], [2, 8, 6, 5], [6, 4, 3, 9]]
    best = min(sum(matrix[i][p[i]] for i in range(3)) for p in itertools.permutations(range(4), 3))
    cols = R.assign(matrix)
    assert len(set(cols)) == 3
    assert sum(matrix[i][c] for i, c in enumerate(cols)) == best


TOPO = cases("topo_matrix.yml")


@pytest.mark.parametrize("case", TOPO, ids=[c["file"].split("/")[-1] for c in TOPO])
def test_topo_matrix(case):
    text = (REPO / case["file"]).read_text(encoding="utf-8")
    got = P.parse_topo_matrix(text)
    assert got["devices"] == case["devices"]
    for key, value in case["legend"].items():
        assert got["nic_legend"][key] == value
    if not case["legend"]:
        assert got["nic_legend"] == {}
    for row, col, cell in case["cells"]:
        assert got["matrix"][row][col] == cell, (row, col)
    for gpu, aff in case["cpu_affinity"].items():
        assert got["cpu_affinity"][gpu] == aff
    for gpu, aff in case["numa_affinity"].items():
        assert got["numa_affinity"][gpu] == aff


def test_topo_matrix_rejects_other_text():
    with pytest.raises(P.ParseError, match="header"):
        P.parse_topo_matrix("No devices were found\n")


def _cfg(port_type=None, acs=None, caps=True):
    data = bytearray(4096)
    struct.pack_into("<HH", data, 0, 0x1000, 0xC030)
    if caps:
        struct.pack_into("<H", data, 6, 0x10)
        data[0x34] = 0x50
        data[0x50] = 0x01  # power management first, then PCIe
        data[0x51] = 0x60
        if port_type is not None:
            data[0x60] = 0x10
            struct.pack_into("<H", data, 0x62, 0x0002 | port_type << 4)
    if acs is not None:
        struct.pack_into("<I", data, 0x100, 0x0001 | 1 << 16 | 0x140 << 20)  # AER first
        struct.pack_into("<I", data, 0x140, 0x000D | 1 << 16)
        struct.pack_into("<HH", data, 0x144, 0x5F, acs)
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (_cfg(0x4, 0x1D), {"port_type": "root_port", "acs_ctl": 0x1D}),
        (_cfg(0x5), {"port_type": "switch_upstream"}),
        (_cfg(0x6, 0x00), {"port_type": "switch_downstream", "acs_ctl": 0}),
        (_cfg(0x6, 0x1D)[:64], {}),  # non-root read: 64 bytes, the capabilities are cut off
        (_cfg(caps=False), {}),
        (b"", {}),
    ],
    ids=["root-port-acs", "upstream", "downstream-acs-off", "64-byte-read", "no-caps", "empty"],
)
def test_parse_config(data, want):
    assert P.parse_config(data) == want


def test_parse_config_on_the_real_gpu():
    """The captured H200 config space (real hardware): an endpoint, no ACS capability."""
    with tarfile.open(REPO / "lab/snapshots/h200-real/snapshot.tar.gz") as tf:
        data = tf.extractfile("sys/devices/pci0000:00/0000:00:06.0/config").read()
    assert data[:4] == bytes.fromhex("de103523")  # vendor 0x10de, device 0x2335, little endian
    assert P.parse_config(data).get("port_type") == "endpoint"


def test_port_types_inferred_without_config(sysroot, tmp_path):
    """A non-root capture (64-byte config) still yields root/upstream/downstream ports."""
    import shutil

    src = sysroot("roce-vlan-gid@1")
    dst = tmp_path / "root"
    shutil.copytree(src, dst, symlinks=True)
    for dirpath, _dirs, files in os.walk(dst):
        if "config" in files:
            path = os.path.join(dirpath, "config")
            with open(path, "r+b") as fh:
                fh.truncate(64)
    facts = T.discover(str(dst))
    types = {b["bdf"]: b["type"] for b in facts["pcie"]["bridges"]}
    assert types == {
        "0000:40:01.0": "root_port",
        "0000:41:00.0": "switch_upstream",
        "0000:42:00.0": "switch_downstream",
        "0000:42:01.0": "switch_downstream",
        "0000:c0:01.0": "root_port",
        "0000:c0:02.0": "root_port",
    }
    assert all(b["acs"] is None for b in facts["pcie"]["bridges"])
    assert facts["paths"]["gpu_nic"]["GPU0"]["mlx5_0"] == "PIX"


def test_absolute_symlinks_are_rerooted(sysroot, tmp_path):
    """Links pointing at /sys/... resolve inside the sysroot, never on the host."""
    import shutil

    src = sysroot("vm-2gpu@1")
    dst = tmp_path / "abs"
    shutil.copytree(src, dst, symlinks=True)
    changed = 0
    for dirpath, dirs, files in os.walk(dst):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                real = os.path.realpath(path)
                os.remove(path)
                os.symlink("/" + os.path.relpath(real, dst), path)
                changed += 1
    assert changed > 10
    want = T.discover(src)
    got = T.discover(str(dst))
    want.pop("sysroot")
    got.pop("sysroot")
    assert got == want
