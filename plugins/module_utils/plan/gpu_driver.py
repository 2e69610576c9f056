# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU driver of one node: who installs it, and what the RDMA and GDS decisions may assume of it.

``gpufabric_gpu_driver.managed_by`` is chosen once:

- ``host``: the driver is on the node before this collection runs. Discovery reads it; a version or
  kernel module named in the intent must match what is loaded. The GPU Operator runs without its
  driver (driver.enabled false) and the host roles load nvidia-peermem and nvidia-fs.
- ``operator``: the GPU Operator's driver pod installs it. The node must have no NVIDIA driver,
  loaded or installed as a package (else the driver lands twice); the decisions take the planned
  driver instead of discovery: the pinned version, its CUDA level and the kernel module type, with
  ``auto`` resolved the way the driver container resolves it. The operator's driver pod loads
  nvidia-peermem (driver.rdma.enabled) and nvidia-fs (gds.enabled); the host roles do not.

Facts (NVIDIA driver installation guide, "Kernel Modules", docs.nvidia.com/datacenter/tesla/
driver-installation-guide/kernel-modules.html): the open flavour supports Turing and newer GPUs
only; the proprietary one is needed for Maxwell, Pascal and Volta. NVIDIA's open-module transition
note (developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules):
Blackwell is supported only by the open flavour. GPU Operator (NVIDIA/cloud-native-docs:
gpu-operator/getting-started.rst, driver.kernelModuleType): ``auto`` needs driver containers
570.86.15 or newer. NVIDIA/gpu-operator controllers/nvidiadriver_controller.go: GDS and GDRCopy
are refused with precompiled drivers.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

VAR = "gpufabric_gpu_driver"
# NVIDIA's CUDA network repository, which carries the driver packages (NVIDIA driver installation
# guide, "Network repository installation"): <base>/<os><version>/<arch>, os tokens debian12,
# ubuntu2404, rhel9.
CUDA_REPO_BASE = "https://developer.download.nvidia.com/compute/cuda/repos"
CUDA_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa"}
AUTO_MIN_VERSION = (570, 86, 15)
OPEN_MIN_ARCH = "turing"
OPEN_ONLY_ARCHS = ("blackwell",)
_ARCHS = ["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"]

# Packages that put an NVIDIA kernel driver on a node (Debian/Ubuntu, the CUDA repositories, EL):
# nvidia-driver[-580[-open|-server]], nvidia-dkms-580[-open], nvidia-kernel[-open]-dkms,
# linux-modules-nvidia-580-<flavour> (Ubuntu's precompiled modules), cuda-drivers[-580],
# nvidia-open[-580], kmod-nvidia-* (NVIDIA driver installation guide, per-distribution pages).
DRIVER_PACKAGES = re.compile(
    r"^(nvidia-driver(-[0-9]+(-server)?(-open)?)?"
    r"|nvidia-dkms-[0-9]+.*"
    r"|nvidia-kernel(-open)?-dkms"
    r"|linux-modules-nvidia-[0-9]+.*"
    r"|cuda-drivers(-[0-9]+)?"
    r"|nvidia-open(-[0-9]+)?"
    r"|kmod-nvidia.*)$"
)


def host_driver_packages(packages: Optional[Mapping[str, Any]]) -> List[str]:
    """Installed packages (ansible_facts.packages) that carry an NVIDIA kernel driver."""
    return sorted(name for name in (packages or {}) if DRIVER_PACKAGES.match(str(name)))


def cuda_repo(values: Mapping[str, Any], ansible: Mapping[str, Any]) -> str:
    """The repository of the host driver packages: gpu_driver_repo_url, or NVIDIA's for this OS."""
    if values.get("gpu_driver_repo_url"):
        return str(values["gpu_driver_repo_url"]).rstrip("/")
    dist = str(ansible.get("distribution") or "").lower()
    if dist == "ubuntu":
        token = "ubuntu" + str(ansible.get("distribution_version") or "").replace(".", "")
    elif ansible.get("os_family") == "RedHat":
        token = "rhel" + str(ansible.get("distribution_major_version") or "")
    else:
        token = dist + str(ansible.get("distribution_major_version") or "")
    arch = CUDA_ARCH.get(str(ansible.get("architecture")), str(ansible.get("architecture")))
    return f"{CUDA_REPO_BASE}/{token}/{arch}"


def _arch_index(arch: Optional[str]) -> int:
    return _ARCHS.index(arch) if arch in _ARCHS else -1


def resolve_kernel_module(
    asked: str, version: str, archs: List[Optional[str]], problems: List[str]
) -> Tuple[Optional[str], str]:
    """The kernel module type the GPU Operator's driver will load on this node, and why."""
    p = f"{VAR}.kernel_module"
    old = sorted({a for a in archs if a and _arch_index(a) < _arch_index(OPEN_MIN_ARCH)})
    open_only = sorted({a for a in archs if a in OPEN_ONLY_ARCHS})
    unknown = [a for a in archs if a is None]
    if asked == "open":
        if old:
            problems.append(
                f"{p}: open, but this node has {', '.join(old)} GPUs; the open kernel module supports Turing and "
                "newer only (use proprietary)"
            )
            return None, ""
        return "open", "asked"
    if asked == "proprietary":
        if open_only:
            problems.append(
                f"{p}: proprietary, but this node has {', '.join(open_only)} GPUs, which only the open kernel "
                "module supports (use open)"
            )
            return None, ""
        return "proprietary", "asked"
    if version_numbers(version) < AUTO_MIN_VERSION:
        problems.append(
            f"{p}: auto is resolved by driver containers 570.86.15 and newer, but {VAR}.version is {version!r}; "
            "set open or proprietary"
        )
        return None, ""
    if unknown:
        problems.append(
            f"{p}: auto cannot be resolved on this node: the architecture of {len(unknown)} GPU(s) is unknown; "
            "set open or proprietary"
        )
        return None, ""
    if old and open_only:
        problems.append(
            f"{p}: no kernel module drives both the {', '.join(old)} and the {', '.join(open_only)} GPUs of this node"
        )
        return None, ""
    if old:
        return "proprietary", f"auto: {', '.join(old)} GPUs need the proprietary module"
    return "open", "auto: every GPU is Turing or newer, so the driver container loads the open module"


def plan_driver(
    values: Mapping[str, Any],
    gpudirect: Mapping[str, Any],
    packages: Optional[Mapping[str, Any]],
    problems: List[str],
    index: Optional[Mapping[str, Any]] = None,
    ansible: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The node's driver section: mode, the driver the decisions assume, and who loads the extra modules.

    ``index`` is the driver repository's package index (doca_repo_info) when the host driver is
    installed by the collection (``packages``); ``packages`` here are the node's installed packages."""
    intent = values.get(VAR) or {}
    mode = intent.get("managed_by") or "host"
    asked = intent.get("kernel_module") or "auto"
    pinned = str(intent.get("version") or "")
    archs = [_gpudirect.gpu_arch(g.get("model"), g.get("compute_cap")) for g in gpudirect.get("gpus") or []]
    loaded_version = gpudirect.get("driver_version")
    loaded_flavour = gpudirect.get("driver_flavour")
    installed = host_driver_packages(packages)
    section: Dict[str, Any] = {
        "managed_by": mode,
        "kernel_module_asked": asked,
        "precompiled": bool(intent.get("precompiled")),
        "gpu_archs": sorted({str(a) for a in archs}),
        "host_packages": installed,
    }
    wanted = [str(p) for p in intent.get("packages") or []]
    if mode == "host" and wanted:
        return _host_packages(values, section, wanted, gpudirect, packages, problems, index, ansible or {})
    if wanted:
        problems.append(
            f"{VAR}.packages: {', '.join(wanted)}, but {VAR}.managed_by is operator: the GPU Operator's driver pod "
            "installs the driver; leave packages empty, or set managed_by: host"
        )
    state = _gpudirect.driver_state(gpudirect)
    if mode == "host":
        section.update({"version": loaded_version, "kernel_module": loaded_flavour, "reason": "loaded on the node"})
        if not state["version"]:
            todo = (
                "reload it (nvidia-smi should then name the version)"
                if state["loaded"]
                else "load or install it first, or set managed_by: operator for the GPU Operator to install it"
            )
            problems.append(
                f"{VAR}.managed_by: host, but on this node {state['text']}"
                f"{'; installed: ' + ', '.join(installed) if installed else ''}; {todo}"
            )
            return section
        if pinned and pinned != loaded_version:
            problems.append(
                f"{VAR}.version: {pinned!r}, but this node runs driver {loaded_version} "
                f"({loaded_flavour} kernel module); update the node or the intent"
            )
        if asked != "auto" and asked != loaded_flavour:
            problems.append(
                f"{VAR}.kernel_module: {asked}, but this node runs the {loaded_flavour} kernel module of driver "
                f"{loaded_version}; reinstall the driver or set kernel_module: auto"
            )
        return section
    present = []
    if state["present"]:
        present.append(state["text"])
    if installed:
        present.append("packages " + ", ".join(installed) + " installed")
    if present:
        problems.append(
            f"{VAR}.managed_by: operator, but this node already has an NVIDIA driver ({'; '.join(present)}); the GPU "
            "Operator's driver pod would install a second one. Remove the host driver, or set managed_by: host"
        )
    module, reason = resolve_kernel_module(asked, pinned, archs, problems)
    section.update({"version": pinned, "kernel_module": module, "reason": reason})
    gds_wanted = bool(values.get("gpufabric_gds_enabled")) and values.get("gpudirect_storage_mode") == "nvidia_fs"
    if section["precompiled"] and gds_wanted:
        problems.append(
            f"{VAR}.precompiled: true, but gpudirect_storage_mode is nvidia_fs: the GPU Operator does not load "
            "nvidia-fs (GDS) with precompiled drivers; set precompiled: false, or gpudirect_storage_mode: compat"
        )
    return section


def _host_packages(
    values: Mapping[str, Any],
    section: Dict[str, Any],
    wanted: List[str],
    gpudirect: Mapping[str, Any],
    packages: Optional[Mapping[str, Any]],
    problems: List[str],
    index: Optional[Mapping[str, Any]],
    ansible: Mapping[str, Any],
) -> Dict[str, Any]:
    """managed_by host with packages: the collection installs and holds the driver at ``version``.

    The loaded driver may differ from the target: that is the change the host layer (install) and
    the upgrade (reload in a drained window) make. The decisions take the target."""
    intent = values.get(VAR) or {}
    pinned = str(intent.get("version") or "")
    asked = intent.get("kernel_module") or "auto"
    loaded_version = gpudirect.get("driver_version")
    loaded_flavour = gpudirect.get("driver_flavour")
    flavour = asked if asked != "auto" else loaded_flavour
    repo = cuda_repo(values, ansible)
    if ansible.get("os_family") not in (None, "Debian"):
        problems.append(
            f"{VAR}.packages: {', '.join(wanted)}, but this node is {ansible.get('os_family')}; the collection "
            "installs the host driver packages on Debian and Ubuntu only (leave packages empty and install the "
            "driver yourself)"
        )
    if not flavour:
        problems.append(
            f"{VAR}.kernel_module: auto takes the loaded driver's module type, but no NVIDIA driver is loaded on this "
            f"node; set open or proprietary for the packages {', '.join(wanted)}"
        )
    if index is not None and pinned:
        available = index.get("packages") or {}
        for name in wanted:
            versions = list(available.get(name) or [])
            if not any(_upgrade.driver_matches(v, pinned) for v in versions):
                problems.append(
                    f"{VAR}.version: {pinned} of {name} is not in {repo}; versions there: "
                    f"{', '.join(versions[-6:]) or 'none (no such package)'}"
                )
    section.update(
        {
            "version": pinned,
            "kernel_module": flavour,
            "reason": f"installed by the collection from {repo} ({VAR}.packages)",
            "packages": wanted,
            "repo_url": repo,
            "installed": _upgrade.installed_version(packages, wanted[0]),
            "loaded": loaded_version,
            "loaded_kernel_module": loaded_flavour,
        }
    )
    return section


def effective_facts(gpudirect: Mapping[str, Any], driver: Mapping[str, Any]) -> Dict[str, Any]:
    """The driver facts the GPUDirect decisions take: the node's own, or the planned operator driver."""
    facts = dict(gpudirect or {})
    if driver.get("managed_by") != "operator" and not driver.get("packages"):
        facts["driver_origin"] = "loaded on the node"
        return facts
    if driver.get("packages"):
        # The host layer installs (and the upgrade loads) the target; decide for it, not the loaded one.
        facts.update(
            {
                "driver_flavour": driver.get("kernel_module"),
                "driver_version": driver.get("version"),
                "cuda_version": _gpudirect.cuda_for_driver(driver.get("version")),
                "driver_origin": driver.get("reason"),
            }
        )
        return facts
    facts.update(
        {
            "driver_flavour": driver.get("kernel_module"),
            "driver_version": driver.get("version"),
            # The driver branch sets the CUDA level; whatever the host reports (nothing, without a driver) does not.
            "cuda_version": _gpudirect.cuda_for_driver(driver.get("version")),
            # The operator's driver container builds nvidia-peermem itself (against MOFED's symbols).
            "peermem_available": None,
            "driver_origin": "planned for the GPU Operator by {}: managed_by operator, kernel_module {}{}".format(
                VAR,
                driver.get("kernel_module_asked"),
                ""
                if driver.get("kernel_module_asked") == driver.get("kernel_module")
                else f" -> {driver.get('kernel_module')}",
            ),
        }
    )
    return facts


def loaded_by(driver: Mapping[str, Any], used: bool) -> Optional[str]:
    """Who loads an extra driver module (nvidia-peermem, nvidia-fs) when it is used: host or operator."""
    if not used:
        return None
    return "operator" if driver.get("managed_by") == "operator" else "host"
