"""Every parser of outside text in plugins/module_utils, with its documented error and its corpus.

A ``Target`` says what a parser may raise (its documented error; nothing for the lenient ones,
which return their documented "absent" values instead) and which real outputs to mutate (the
fixtures of tests/unit/*/fixtures and the lab's captures; sources in their READMEs). The fuzz
tests hold every target to: return, or raise only the documented error, for any input.

To fuzz a new parser, add a Target here. The plan's intent checker takes inventory data, not
text; it is fuzzed in tests/unit/plan/test_fuzz_intent.py.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Tuple, Type

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import pcie_acs as _pcie_acs
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import cufile as _cufile_parser
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import qos as _qos_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import topology as _topology_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import vlan as _vlan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator_values as _gpu_operator_values
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, version_numbers

REPO = Path(__file__).resolve().parents[3]
UNIT = REPO / "tests" / "unit"


def files(*patterns: str) -> List[str]:
    """Texts of the files matching the glob patterns (relative to the repository), sorted by path."""
    found = sorted({p for pattern in patterns for p in REPO.glob(pattern) if p.is_file()})
    assert found, f"no fixtures match {patterns}"
    return [p.read_text(encoding="utf-8") for p in found]


def config_spaces() -> List[bytes]:
    """PCI config spaces of the captured H200 server (lab/snapshots/h200-real, real hardware)."""
    with tarfile.open(REPO / "lab/snapshots/h200-real/snapshot.tar.gz") as tf:
        names = sorted(n for n in tf.getnames() if n.endswith("/config"))
        return [tf.extractfile(n).read() for n in names]


@dataclass
class Target:
    name: str
    func: Callable[[Any], Any]
    corpus: Callable[[], List[Any]]
    raises: Tuple[Type[BaseException], ...] = ()
    kind: str = "text"  # text (str or bytes accepted) or bytes (binary input)


ROCE = "tests/unit/roce/fixtures"
CUFILE_EDIT = {"properties": {"allow_compat_mode": True, "rdma_dev_addr_list": ["10.0.0.11"]}, "fs": {"nfs": {"x": 1}}}

TARGETS: List[Target] = [
    # RoCE QoS tools (_qos_parsers.py, _pcie_acs.py)
    Target("mlnx_qos", _qos_parsers.parse_mlnx_qos, lambda: files(f"{ROCE}/mlnx_qos/*.txt"), (ParseError,)),
    Target("dcb_pfc", _qos_parsers.parse_dcb_pfc, lambda: files(f"{ROCE}/dcb/pfc_*.txt"), (ParseError,)),
    Target("dcb_ets", _qos_parsers.parse_dcb_ets, lambda: files(f"{ROCE}/dcb/ets_*.txt"), (ParseError,)),
    Target("dcb_app", _qos_parsers.parse_dcb_app, lambda: files(f"{ROCE}/dcb/app_*.txt"), (ParseError,)),
    Target("dcb_buffer", _qos_parsers.parse_dcb_buffer, lambda: files(f"{ROCE}/dcb/buffer_*.txt"), (ParseError,)),
    Target(
        "dcb_size", _qos_parsers.parse_size, lambda: ["0b", "10Kb", "1.5Mb", "100K", "87296", "1222Kb"], (ParseError,)
    ),
    Target("rdma_system", _qos_parsers.parse_rdma_system, lambda: files(f"{ROCE}/rdma/*.txt"), (ParseError,)),
    Target("ethtool_pause", _qos_parsers.parse_ethtool_pause, lambda: files(f"{ROCE}/ethtool/*.txt")),
    Target("traffic_class", _qos_parsers.parse_traffic_class, lambda: ["Global tclass=106\n", "106\n", ""]),
    Target("setpci_word", _pcie_acs.parse_setpci_word, lambda: files(f"{ROCE}/setpci/*.txt"), (ParseError,)),
    # topology discovery (_topology_parsers.py): sysfs values are None when unreadable
    Target(
        "topo_matrix",
        _topology_parsers.parse_topo_matrix,
        lambda: files("lab/snapshots/layouts/*.topo-m.txt", "lab/snapshots/h200-real/**/nvidia-smi-topo-m.txt"),
        (ParseError,),
    ),
    Target("cpulist", _topology_parsers.parse_cpulist, lambda: ["0-3,8", "5", "", "0-55,112-167"], (ParseError,)),
    Target("hex", _topology_parsers.parse_hex, lambda: ["0x10de", "0x030200", "15b3\n"]),
    Target("int", _topology_parsers.parse_int, lambda: ["-1", "16", "0x10", "4096\n"]),
    Target("speed", _topology_parsers.parse_speed, lambda: ["32.0 GT/s PCIe", "8 GT/s", "Unknown"]),
    Target("rate", _topology_parsers.parse_rate, lambda: ["400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)"]),
    Target("state", _topology_parsers.parse_state, lambda: ["4: ACTIVE", "1: DOWN", "5: LinkUp"]),
    Target(
        "gid",
        _topology_parsers.gid_to_ipv4,
        lambda: ["0000:0000:0000:0000:0000:ffff:0a03:0201\n", "fe80:0000:0000:0000:ba3f:d2ff:fe00:0100"],
    ),
    Target("nvlink_cell", _topology_parsers.nvlink_count, lambda: ["NV18", "PIX", "SYS", "X"]),
    Target("pci_config", _topology_parsers.parse_config, config_spaces, kind="bytes"),
    # 802.1Q VLAN ids (parsers/vlan.py, net/8021q/vlanproc.c)
    Target(
        "vlan_config",
        _vlan.parse_vlan_config,
        lambda: [
            "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n",
            "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n"
            "enp68s0np0.100 | 100  | enp68s0np0\nbond0.7        | 7  | bond0\n",
        ],
        (ParseError,),
    ),
    Target(
        "vlan_dev",
        _vlan.parse_vlan_dev,
        lambda: [
            "enp68s0np0.100  VID: 100\t REORDER_HDR: 1  dev->priv_flags: 1001\n",
            "bond0.7  VID: 7\t REORDER_HDR: 0  dev->priv_flags: 21\n\n      total frames received   0\n",
        ],
        (ParseError,),
    ),
    # GPUDirect RDMA (_gpudirect.py)
    Target(
        "proc_nvidia_version", _gpudirect.parse_proc_version, lambda: files("tests/unit/gds/fixtures/gpudirect/*.txt")
    ),
    Target(
        "modinfo",
        _gpudirect.parse_modinfo,
        lambda: [
            "filename:       /lib/modules/6.8.0/updates/dkms/nvidia.ko\n"
            "license:        Dual MIT/GPL\nversion:        580.95.05\n"
        ],
    ),
    Target(
        "nvidia_smi_cuda",
        _gpudirect.parse_cuda_from_smi,
        lambda: ["| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n"],
    ),
    # nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader (nvidia-smi(1) CSV output)
    Target(
        "nvidia_smi_gpus",
        _gpudirect.parse_smi_gpus,
        lambda: ["NVIDIA H200, 9.0\nNVIDIA H200, 9.0\n", "Tesla T4, [N/A]\n"],
        (ParseError,),
    ),
    Target(
        "proc_modules", _gpudirect.loaded_modules, lambda: ["nvidia 16384 0 - Live 0x0\nib_core 524288 8 - Live 0x0\n"]
    ),
    Target("kernel_version", version_numbers, lambda: ["6.8.0-85-generic", "5.15.0-91-generic\n", "13.0"]),
    # GPUDirect Storage (parsers/gdscheck.py, parsers/cufile.py, apply/cufile.py)
    Target("gdscheck", _gdscheck.parse, lambda: files("tests/unit/gds/fixtures/gdscheck/*.txt")),
    Target("cufile", _cufile_parser.parse, lambda: files("tests/unit/gds/fixtures/cufile/*.json"), (ParseError,)),
    Target(
        "cufile_edit",
        lambda text: _cufile.apply_settings(text, CUFILE_EDIT),
        lambda: files("tests/unit/gds/fixtures/cufile/*.json"),
        (ParseError,),
    ),
    # NCCL (_nccl.py): nccl.conf is read back leniently; the version is inventory, refused by name
    Target("nccl_conf", _nccl.parse, lambda: ["# managed\nNCCL_IB_HCA==mlx5_0:1\nNCCL_IB_TC=106\n"]),
    Target(
        "nccl_version", _nccl.parse_version, lambda: ["2.27.3", "2.18", "2.19.3-1+cuda12.2"], (_nccl.NcclPlanError,)
    ),
    Target("chart_version", _gpu_operator_values.chart_numbers, lambda: ["v25.10.0", "24.9.2-rc.1", "25.3"]),
    # DOCA-OFED (plan.doca_index, plan.doca_stack): repository indexes and the installed stack
    Target(
        "apt_packages",
        _doca_index.parse_packages_index,
        lambda: files("tests/unit/doca/fixtures/Packages"),
        (ParseError,),
    ),
    Target(
        "apt_depends",
        _doca_index.parse_packages_depends,
        lambda: files("tests/unit/doca/fixtures/Packages"),
        (ParseError,),
    ),
    Target(
        "repomd",
        _doca_index.primary_location,
        lambda: files("tests/unit/doca/fixtures/repodata/repomd.xml"),
        (ParseError, _doca.DocaError),
    ),
    Target(
        "rpm_primary",
        _doca_index.parse_primary_xml,
        lambda: files("tests/unit/doca/fixtures/repodata/primary.xml"),
        (ParseError,),
    ),
    Target("ofed_info", _doca_stack.parse_ofed_info, lambda: files("tests/unit/doca/fixtures/ofed_info/*.txt")),
    Target("dkms_status", _doca_stack.parse_dkms_status, lambda: files("tests/unit/doca/fixtures/dkms/*.txt")),
    Target(
        "package_versions",
        lambda text: _doca_index.sort_versions(text.splitlines()),
        lambda: ["24.10.OFED.24.10.1.1.4.1-1\n2.9.1-0.1.4\n1:2.9.2-0.1.8\n24.10-0.2410068"],
        (ParseError,),
    ),
    Target("dkms_release", _doca_stack.ofed_release_from_dkms_version, lambda: ["24.10.OFED.24.10.1.1.4.1-1"]),
    Target("exact_depends", _doca_index.exact_dependencies, lambda: ["a (= 1.0), b (>= 2), c | d (= 3)"]),
    # Validation (_perftest.py, _nccltests.py, _gdsio.py, _gpuprobe.py): measurement output read back
    # from the nodes; each refuses unreadable output with its own error, which validate_report turns
    # into a failed check naming the node and the tool
    Target(
        "perftest",
        _perftest.parse,
        lambda: files(
            "tests/unit/validate/fixtures/perftest/*_client.txt", "tests/unit/validate/fixtures/perftest/*_gbits.txt"
        ),
        (_perftest.PerftestError,),
    ),
    Target(
        "nccl_tests",
        _nccltests.parse,
        lambda: files("tests/unit/validate/fixtures/nccltests/*.txt"),
        (_nccltests.NcclTestsError,),
    ),
    Target("gdsio", _gdsio.parse, lambda: files("tests/unit/validate/fixtures/gdsio/*.txt"), (_gdsio.GdsioError,)),
    Target(
        "gpu_probe",
        _gpuprobe.load,
        lambda: files("tests/unit/validate/fixtures/gpu_probe/*.json"),
        (_gpuprobe.GpuProbeError,),
    ),
]
