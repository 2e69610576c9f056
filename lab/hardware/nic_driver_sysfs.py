# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Add the mlx5 driver's QoS-related sysfs/configfs/debugfs files to a lab hardware tree.

The lab snapshots (lab/snapshots) describe PCI/netdev/RDMA topology only. What the NIC driver
adds on top depends on the driver flavour (the roce scenarios test one each):

* ``mofed`` (MLNX_OFED/DOCA-OFED mlx5, MOFED kernel tree en_sysfs.c): per netdev
  ``ecn/roce_{np,rp}/enable/0..7`` and ``ecn/roce_np/{cnp_dscp,cnp_802p_prio}``, ``qos/trust``
  and ``qos/dscp2prio``; per RDMA device ``tc/1/traffic_class`` (empty until set).
* ``inbox`` (upstream mlx5): no ecn/ or qos/ sysfs and no traffic_class; congestion
  parameters in debugfs ``sys/kernel/debug/mlx5/<BDF>/cc_params/np_cnp_{dscp,prio}``
  (drivers/infiniband/hw/mlx5/cong.c).
* both: RDMA-CM configfs root ``sys/kernel/config/rdma_cm`` (rdma_cm loaded, configfs mounted).

Power-on values: trust pcp, the firmware DSCP table (priority = DSCP >> 3), CNP DSCP 48 and
priority 6 (firmware NV defaults, docs/facts.md, "RoCE QoS on ConnectX"), ECN enable 0 on every
priority (the lab starts with DCQCN off so that enabling it is visible).

Usage: ``nic_driver_sysfs.py mofed|inbox|boot SYSROOT``.
``boot`` is what the lab node's hardware unit runs after restoring the power-on tree: the
DOCA-OFED flavour when the lab's stand-in DOCA-OFED kernel modules are installed (their DKMS
modules take precedence over the inbox ones at boot, as on a real host), else the node's
configured flavour (``/etc/gpufabric-lab/nic-driver``, written by lab/prepare.yml from
``gpufabric_lab_nic_driver``; inbox when absent). The lab's stand-in ``openibd start`` runs
``mofed``: loading DOCA-OFED brings its sysfs and resets the QoS state to power-on values.
"""

import os
import sys

FLAVOURS = ("mofed", "inbox")
OFED_RELEASE = "/usr/lib/gpufabric-lab/ofed-release"
CONFIGURED = "/etc/gpufabric-lab/nic-driver"


def boot_flavour(ofed_release=OFED_RELEASE, configured=CONFIGURED):
    """The flavour a node comes up with: DOCA-OFED when installed, else the configured one."""
    if os.path.exists(ofed_release):
        return "mofed"
    try:
        with open(configured) as fh:
            flavour = fh.read().strip()
    except FileNotFoundError:
        return "inbox"
    if flavour not in FLAVOURS:
        raise ValueError(f"{configured}: unknown NIC driver flavour {flavour!r} (mofed or inbox)")
    return flavour


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def mlx5_pf_netdevs(sysroot):
    base = os.path.join(sysroot, "sys/class/net")
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        dev = os.path.join(base, name, "device")
        driver = os.path.join(dev, "driver")
        if not os.path.exists(dev) or os.path.exists(os.path.join(dev, "physfn")):
            continue
        if os.path.basename(os.path.realpath(driver)) != "mlx5_core":
            continue
        yield name, os.path.realpath(dev)


def main(argv):
    if len(argv) != 2 or argv[0] not in (*FLAVOURS, "boot"):
        sys.stderr.write("usage: nic_driver_sysfs.py mofed|inbox|boot SYSROOT\n")
        return 2
    flavour, sysroot = argv
    if flavour == "boot":
        try:
            flavour = boot_flavour()
        except ValueError as exc:
            sys.stderr.write(f"nic_driver_sysfs.py: {exc}\n")
            return 1
    os.makedirs(os.path.join(sysroot, "sys/kernel/config/rdma_cm"), exist_ok=True)
    for netdev, devdir in mlx5_pf_netdevs(sysroot):
        netdir = os.path.join(sysroot, "sys/class/net", netdev)
        bdf = os.path.basename(devdir)
        if flavour == "mofed":
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    write(os.path.join(netdir, "ecn", point, "enable", str(prio)), "0\n")
            write(os.path.join(netdir, "ecn/roce_np/cnp_dscp"), "48\n")
            write(os.path.join(netdir, "ecn/roce_np/cnp_802p_prio"), "6\n")
            write(os.path.join(netdir, "qos/trust"), "pcp\n")
            write(os.path.join(netdir, "qos/dscp2prio"), "dscp prio\n" + "".join(f"{d} {d >> 3}\n" for d in range(64)))
            ibdir = os.path.join(devdir, "infiniband")
            for rdma in sorted(os.listdir(ibdir)) if os.path.isdir(ibdir) else []:
                write(os.path.join(sysroot, "sys/class/infiniband", rdma, "tc/1/traffic_class"), "")
        else:
            cc = os.path.join(sysroot, "sys/kernel/debug/mlx5", bdf, "cc_params")
            write(os.path.join(cc, "np_cnp_dscp"), "48\n")
            write(os.path.join(cc, "np_cnp_prio"), "6\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
