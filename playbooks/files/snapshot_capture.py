#!/usr/bin/env python
"""Capture the sysfs/procfs subset that topology discovery reads, into a sysroot tarball.

Run on a live node (as root, so PCI config spaces are read in full), normally through
playbooks/snapshot.yml:

    python3 snapshot_capture.py --output /tmp/node.tar.gz [--root /] [--no-nvidia-smi]

Stdlib only, Python >= 3.6.  What is captured (paths relative to the sysroot):
  * every PCI function in sys/bus/pci/devices and every bridge above it: identity, NUMA, link
    attributes, the config space, driver/iommu_group/physfn links, net/ and infiniband/ children
  * sys/class/net (netdev attributes, VLAN lower/upper links), sys/class/infiniband (device
    attributes, per-port state, rate, link layer and the used part of the GID table)
  * NUMA nodes, online CPUs, IOMMU groups and units, DMI vendor/product
  * proc/cpuinfo, proc/cmdline, proc/net/vlan/* (VLAN ids, when the 8021q module is loaded)
  * `nvidia-smi topo -m` output as nvidia-smi-topo-m.txt when nvidia-smi is present
Nothing else (no serial numbers beyond the GUIDs/MACs needed to tell NICs apart).
"""

from __future__ import annotations

import argparse
import errno
import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

PCI_ATTRS = (
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "class",
    "revision",
    "numa_node",
    "local_cpulist",
    "local_cpus",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "secondary_bus_number",
    "subordinate_bus_number",
    "sriov_totalvfs",
    "sriov_numvfs",
    "enable",
    "config",
)
PCI_LINKS = ("driver", "iommu_group", "physfn")
NET_ATTRS = ("address", "mtu", "operstate", "dev_port", "dev_id", "type", "ifindex", "speed")
IB_ATTRS = ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "node_type")
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid", "cap_mask")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
KEEP_ZERO_GIDS = 8  # keep the first unused entries so the table shape stays visible


class Capture:
    def __init__(self, root: str, out: str):
        self.root = root
        self.out = out
        self.seen = set()
        self.warnings = []

    def src(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def copy_file(self, rel: str) -> bool:
        if rel in self.seen:
            return True
        path = self.src(rel)
        if os.path.islink(path) or not os.path.isfile(path):
            return False
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENODEV, errno.EOPNOTSUPP):  # attribute n/a here
                self.warnings.append(f"{rel}: {exc}")
            return False
        self.seen.add(rel)
        dest = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as fh:
            fh.write(data)
        return True

    def copy_link(self, rel: str) -> str:
        """Record a symlink (made relative to its own directory); return its resolved rel path."""
        path = self.src(rel)
        if not os.path.islink(path):
            return ""
        target = os.readlink(path)
        if os.path.isabs(target):
            target_rel = os.path.relpath(os.path.join(self.root, target.lstrip("/")), self.root)
            target = os.path.relpath(target_rel, os.path.dirname(rel))
        dest = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            os.symlink(target, dest)
        self.seen.add(rel)
        return os.path.relpath(os.path.realpath(path), os.path.realpath(self.root))

    def mkdir(self, rel: str) -> None:
        os.makedirs(os.path.join(self.out, rel), exist_ok=True)

    def listdir(self, rel: str):
        try:
            return sorted(os.listdir(self.src(rel)))
        except OSError:
            return []

    # ------------------------------------------------------------------------------------
    def pci_device(self, rel: str) -> None:
        """rel: real path of a PCI function (sys/devices/pci.../BDF)."""
        if rel in self.seen:
            return
        self.seen.add(rel)
        self.mkdir(rel)
        for attr in PCI_ATTRS:
            self.copy_file(rel + "/" + attr)
        for link in PCI_LINKS:
            target = self.copy_link(rel + "/" + link)
            if target and link != "physfn":
                self.mkdir(target)
        for name in self.listdir(rel):
            if name.startswith("virtfn"):
                self.copy_link(rel + "/" + name)
        for ifname in self.listdir(rel + "/net"):
            self.netdev(rel + "/net/" + ifname)
        for dev in self.listdir(rel + "/infiniband"):
            self.ibdev(rel + "/infiniband/" + dev)

    def netdev(self, rel: str) -> None:
        if rel in self.seen:
            return
        self.seen.add(rel)
        self.mkdir(rel)
        for attr in NET_ATTRS:
            self.copy_file(rel + "/" + attr)
        self.copy_link(rel + "/device")
        for name in self.listdir(rel):
            if name.startswith(("lower_", "upper_")):
                target = self.copy_link(rel + "/" + name)
                if target:
                    self.netdev(target)

    def ibdev(self, rel: str) -> None:
        if rel in self.seen:
            return
        self.seen.add(rel)
        for attr in IB_ATTRS:
            self.copy_file(rel + "/" + attr)
        self.copy_link(rel + "/device")
        for port in self.listdir(rel + "/ports"):
            prel = f"{rel}/ports/{port}"
            for attr in PORT_ATTRS:
                self.copy_file(prel + "/" + attr)
            zeros = 0
            gids = self.listdir(prel + "/gids")
            for idx in sorted(gids, key=lambda s: int(s) if s.isdigit() else 0):
                try:
                    with open(self.src(prel + "/gids/" + idx)) as fh:
                        gid = fh.read().strip()
                except OSError:
                    continue
                if gid == ZERO_GID:
                    zeros += 1
                    if zeros > KEEP_ZERO_GIDS:
                        continue
                self.copy_file(prel + "/gids/" + idx)
                self.copy_file(prel + "/gid_attrs/types/" + idx)
                self.copy_file(prel + "/gid_attrs/ndevs/" + idx)

    def run(self, nvidia_smi: bool) -> None:
        for bdf in self.listdir("sys/bus/pci/devices"):
            link = "sys/bus/pci/devices/" + bdf
            real = self.copy_link(link)
            if not real:
                continue
            # every PCI function on the way down from the host bridge
            parts = real.split("/")
            for i in range(3, len(parts) + 1):
                sub = "/".join(parts[:i])
                if i == 3:
                    self.mkdir(sub)
                elif os.path.isfile(self.src(sub + "/config")):
                    self.pci_device(sub)
        for ifname in self.listdir("sys/class/net"):
            real = self.copy_link("sys/class/net/" + ifname)
            if real:
                self.netdev(real)
        for dev in self.listdir("sys/class/infiniband"):
            real = self.copy_link("sys/class/infiniband/" + dev)
            if real:
                self.ibdev(real)
        for node in self.listdir("sys/devices/system/node"):
            if node.startswith("node") and node[4:].isdigit():
                self.copy_file(f"sys/devices/system/node/{node}/cpulist")
                self.copy_file(f"sys/devices/system/node/{node}/cpumap")
        for name in ("online", "possible"):
            self.copy_file("sys/devices/system/node/" + name)
        self.copy_file("sys/devices/system/cpu/online")
        self.mkdir("sys/kernel/iommu_groups")
        for group in self.listdir("sys/kernel/iommu_groups"):
            for dev in self.listdir(f"sys/kernel/iommu_groups/{group}/devices"):
                self.copy_link(f"sys/kernel/iommu_groups/{group}/devices/{dev}")
        for unit in self.listdir("sys/class/iommu"):
            self.mkdir("sys/class/iommu/" + unit)
        for name in ("sys_vendor", "product_name"):
            self.copy_file("sys/class/dmi/id/" + name)
        self.copy_file("proc/cpuinfo")
        self.copy_file("proc/cmdline")
        # 802.1Q VLAN ids (net/8021q/vlanproc.c): the config table and each VLAN netdev's file
        if self.copy_file("proc/net/vlan/config"):
            for name in self.listdir("proc/net/vlan"):
                if name != "config":
                    self.copy_file("proc/net/vlan/" + name)
        if nvidia_smi and shutil.which("nvidia-smi"):
            env = dict(os.environ, LC_ALL="C")
            try:
                res = subprocess.run(
                    ["nvidia-smi", "topo", "-m"],
                    capture_output=True,
                    env=env,
                    timeout=120,
                    check=False,
                )
                if res.returncode == 0:
                    with open(os.path.join(self.out, "nvidia-smi-topo-m.txt"), "wb") as fh:
                        fh.write(res.stdout)
                else:
                    self.warnings.append(f"nvidia-smi topo -m: rc {res.returncode}")
            except (OSError, subprocess.SubprocessError) as exc:
                self.warnings.append(f"nvidia-smi topo -m: {exc}")


def write_tarball(src_dir: str, output: str) -> None:
    """Pack a sysroot directory deterministically (sorted, mtime 0, root-owned, relative names)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirnames, filenames in os.walk(src_dir):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, src_dir)
            links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
            if not filenames and not dirnames and rel_dir != ".":
                _add_member(tf, dirpath, os.path.normpath(rel_dir))  # keep empty dirs (link targets)
            for fn in sorted(filenames + links):
                _add_member(tf, os.path.join(dirpath, fn), os.path.normpath(os.path.join(rel_dir, fn)))
            dirnames[:] = [d for d in dirnames if d not in links]
    with open(output, "wb") as out, gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(buf.getvalue())


def _add_member(tf: tarfile.TarFile, full: str, arcname: str) -> None:
    info = tf.gettarinfo(full, arcname=arcname)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isreg():
        info.mode = 0o644
        with open(full, "rb") as fh:
            tf.addfile(info, fh)
    else:
        tf.addfile(info)


def main() -> int:
    ap = argparse.ArgumentParser(description="Capture a topology snapshot of this node.")
    ap.add_argument("--output", required=True, help="tar.gz to write")
    ap.add_argument("--root", default="/", help="root to capture from (default /)")
    ap.add_argument("--no-nvidia-smi", action="store_true", help="do not run nvidia-smi topo -m")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.root, "sys/bus/pci/devices")):
        print(f"snapshot_capture.py: {args.root} has no sys/bus/pci/devices; not a sysfs root", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="gpufabric-snapshot-")
    try:
        cap = Capture(args.root, tmp)
        cap.run(not args.no_nvidia_smi)
        write_tarball(tmp, args.output)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for w in cap.warnings:
        print("warning: " + w, file=sys.stderr)
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
