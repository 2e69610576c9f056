"""lab/snapshots: names, @N identities, tarball format, and the capture round trip."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SYNTHETIC = ["dgx-h200-8x8", "vm-2gpu", "roce-vlan-gid", "pcie-l40s-4x2"]


CAPTURE = REPO / "playbooks/files/snapshot_capture.py"


def test_known_names(snapshots):
    assert snapshots.known_names() == [*sorted(SYNTHETIC), "h200-real"]


@pytest.mark.parametrize("name", ["Bad Name", "dgx@0", "dgx@256", "x@y"])
def test_invalid_names(snapshots, name):
    with pytest.raises(snapshots.SnapshotError):
        snapshots.parse_name(name)


def test_real_capture_has_no_node_variants(snapshots, tmp_path):
    with pytest.raises(snapshots.SnapshotError, match="no @N node variants"):
        snapshots.materialize("h200-real@2", str(tmp_path))


def test_unknown_layout(snapshots, tmp_path):
    with pytest.raises(snapshots.SnapshotError, match="unknown snapshot"):
        snapshots.materialize("dgx-b300-8x8", str(tmp_path))


@pytest.mark.parametrize("name", [*SYNTHETIC, "h200-real"])
def test_tarball_members(snapshots, tmp_path, name):
    out = tmp_path / "s.tar.gz"
    snapshots.build(name, str(out))
    with tarfile.open(out) as tf:
        members = tf.getmembers()
    names = [m.name for m in members]
    assert all(not n.startswith(("/", "./")) and ".." not in n.split("/") for n in names)
    assert all(n.split("/")[0] in ("sys", "proc", "nvidia-smi-topo-m.txt") for n in names)
    links = [m for m in members if m.issym()]
    assert links, "sysfs symlinks are kept"
    assert all(not m.linkname.startswith("/") for m in links)
    assert any(n.startswith("sys/bus/pci/devices/") for n in names)
    assert "proc/cpuinfo" in names


def test_tarball_is_reproducible(snapshots, tmp_path):
    a, b = tmp_path / "a.tgz", tmp_path / "b.tgz"
    snapshots.build("roce-vlan-gid@3", str(a))
    snapshots.build("roce-vlan-gid@3", str(b))
    assert a.read_bytes() == b.read_bytes()


def test_cli(tmp_path):
    out = tmp_path / "n.tgz"
    res = subprocess.run(
        [sys.executable, str(REPO / "lab/snapshots/build.py"), "vm-2gpu@7", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert out.exists()
    bad = subprocess.run(
        [sys.executable, str(REPO / "lab/snapshots/build.py"), "nope", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "unknown snapshot" in bad.stderr


def test_node_identities(snapshots, tmp_path):
    one = Path(snapshots.materialize("dgx-h200-8x8@1", str(tmp_path / "1")))
    two = Path(snapshots.materialize("dgx-h200-8x8@200", str(tmp_path / "200")))
    rel = "sys/class/net/enp24s0np0/address"
    assert (one / rel).read_text().strip() == "b8:3f:d2:00:01:00"
    assert (two / rel).read_text().strip() == "b8:3f:d2:00:c8:00"
    gid = "sys/class/infiniband/mlx5_1/ports/1/gids/3"
    assert (one / gid).read_text().strip() == "0000:0000:0000:0000:0000:ffff:0a01:0101"  # 10.1.1.1
    assert (two / gid).read_text().strip() == "0000:0000:0000:0000:0000:ffff:0a01:c801"  # 10.1.200.1
    assert (one / "sys/class/infiniband/mlx5_1/node_guid").read_text() != (
        two / "sys/class/infiniband/mlx5_1/node_guid"
    ).read_text()


def test_capture_round_trip(snapshots, tmp_path):
    """The snapshot capture script over a materialized tree gives back the files discovery reads."""
    src = Path(snapshots.materialize("roce-vlan-gid@2", str(tmp_path / "src")))
    out = tmp_path / "cap.tgz"
    res = subprocess.run(
        [sys.executable, str(CAPTURE), "--root", str(src), "--output", str(out),
         "--no-nvidia-smi"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    dst = tmp_path / "dst"
    snapshots._extract(str(out), str(dst))

    def tree(root):
        items = {}
        for dirpath, dirs, files in os.walk(root):
            for n in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
                p = os.path.join(dirpath, n)
                rel = os.path.relpath(p, root)
                items[rel] = ("link", os.readlink(p)) if os.path.islink(p) else ("file", Path(p).read_bytes())
        return items

    a, b = tree(src), tree(dst)
    # not captured on purpose: drivers' back links, NVMe class entries, the nvidia-smi file
    skipped = {k for k in a if k.startswith(("sys/bus/pci/drivers/", "sys/class/nvme")) or "/nvme/" in k}
    skipped.add("nvidia-smi-topo-m.txt")
    assert {k: v for k, v in a.items() if k not in skipped} == b


def test_capture_refuses_a_non_sysfs_root(tmp_path):
    res = subprocess.run(
        [sys.executable, str(CAPTURE), "--root", str(tmp_path), "--output", "x.tgz"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2
    assert "not a sysfs root" in res.stderr


def test_real_capture_has_no_secrets():
    """The committed capture carries sysfs/procfs only: no serial numbers or UUIDs."""
    with tarfile.open(REPO / "lab/snapshots/h200-real/snapshot.tar.gz") as tf:
        names = tf.getnames()
        text = b"".join(tf.extractfile(m).read() for m in tf.getmembers() if m.isfile())
    assert all(n.split("/")[0] in ("sys", "proc", "nvidia-smi-topo-m.txt") for n in names)
    assert b"GPU-" not in text
    assert b"Serial" not in text
