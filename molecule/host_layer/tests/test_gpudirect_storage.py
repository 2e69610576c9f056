"""gpudirect_storage on the DOCA-OFED node: nvidia-gds 13.0.2 from the lab's signed CUDA repository,
nvidia-fs loaded and persisted (back after the reboot), cufile.json edited in place (comments and
untouched keys kept), gdscheck's verdict. The two other nodes have GDS off (gpufabric_gds_enabled:
false): the role does not run there."""

from __future__ import annotations

import json

from conftest import read_text, sys_path

SHIPPED = "/usr/local/cuda-13.0/gds/cufile.json"


def test_the_pinned_gds_packages_are_installed(mofed):
    out = mofed.check_output(
        "dpkg-query -W -f '${Package}=${Version}\\n' nvidia-gds-13-0 libcufile-13-0 nvidia-fs-dkms gds-tools-13-0"
    ).splitlines()
    assert "nvidia-gds-13-0=13.0.2-1" in out, out
    assert "libcufile-13-0=1.15.1.6-1" in out, out
    assert "nvidia-fs-dkms=2.26.6-1" in out, out
    source = read_text(mofed, "/etc/apt/sources.list.d/gpufabric-cuda.list")
    assert "file:///var/lib/gpufabric-lab/repo/cuda/debian12/x86_64" in source, source


def test_nvidia_fs_is_loaded_and_loads_at_boot(mofed):
    assert mofed.file(sys_path("sys/module/nvidia_fs")).is_directory
    assert "2.26" in read_text(mofed, sys_path("proc/driver/nvidia-fs/version"))
    assert "nvidia-fs" in read_text(mofed, "/etc/modules-load.d/nvidia-fs.conf").split()


def test_cufile_json_holds_the_intent_and_keeps_nvidias_comments(mofed, topology):
    text = read_text(mofed, "/etc/cufile.json")
    shipped = read_text(mofed, SHIPPED)
    addrs = []
    for nic in topology(mofed)["nics"]:
        if nic["role"] in ("storage", "compute"):
            for port in nic["ports"]:
                ipv4 = (port.get("roce_v2_ipv4") or {}).get("ipv4")
                if ipv4 and ipv4 not in addrs:
                    addrs.append(ipv4)
    assert len(addrs) >= 8
    assert f'"rdma_dev_addr_list": {json.dumps(addrs)}' in text, text
    assert '"level": "WARN"' in text, text
    assert '"gds_write_support": true' in text, text
    assert '"allow_compat_mode": true' in text, text
    assert text.count("//") == shipped.count("//"), "comments of NVIDIA's cufile.json were lost"
    assert '"rdma_dynamic_routing_order": [ "GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P" ]' in text, text


# gdscheck's name for each filesystem backend of gpufabric_storage.
GDSCHECK_FS = {
    "nfs": "NFS",
    "nvmeof": "NVMeOF",
    "lustre": "DDN EXAScaler",
    "gpfs": "IBM Spectrum Scale",
    "weka": "WekaFS",
}


def driver_configuration(out):
    """gdscheck's DRIVER CONFIGURATION table: {name: 'Supported' | 'Unsupported'}."""
    rows = {}
    for line in out.splitlines():
        name, sep, value = line.partition(" : ")
        if sep and value.strip() in ("Supported", "Unsupported"):
            rows[name.strip()] = value.strip()
    return rows


def test_gdscheck_verifies_the_platform(mofed, node_record):
    out = mofed.check_output("/usr/local/cuda-13.0/gds/tools/gdscheck -p")
    assert "Platform verification succeeded" in out, out
    assert "nvidia_fs version:  2.26" in out, out
    assert "--rdma devices        : Configured" in out, out
    assert "fs.gpfs.gds_write_support : true" in out, out
    # A filesystem is supported where the plan has it (gpufabric_storage over RDMA: its client, and
    # DOCA-OFED's RDMA modules for NFS and NVMe-oF, come with storage_client); the cuFile sections of
    # this scenario (nfs, gpfs) configure GDS for them but mount nothing. Local NVMe through nvidia-fs
    # and user-space RDMA through cuFile's RDMA addresses are this role's alone.
    planned = {GDSCHECK_FS[fs["backend"]] for fs in node_record(mofed)["storage"] if fs["transport"] == "rdma"}
    rows = driver_configuration(out)
    assert set(GDSCHECK_FS.values()) <= set(rows), out
    assert {name for name, value in rows.items() if value == "Supported"} == {"NVMe", "Userspace RDMA"} | planned, out


def test_gds_is_left_alone_where_it_is_off(inbox, pcie):
    for host in (inbox, pcie):
        assert not host.file("/etc/apt/sources.list.d/gpufabric-cuda.list").exists
        assert not host.file("/etc/modules-load.d/nvidia-fs.conf").exists
        assert not host.file(sys_path("sys/module/nvidia_fs")).exists
