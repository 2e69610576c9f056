# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node plan's sections of the host software stack (plan/node.py puts them in the plan):
DOCA-OFED (the repository, the profile, the version the pin selects, what is installed and loaded),
GPUDirect RDMA (the method, whether MOFED is installed or planned) and GPUDirect Storage.
Each takes the node's checked values and facts and appends its refusals to ``problems``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack


def mofed_installed(doca: Optional[Mapping[str, Any]]) -> bool:
    """The node has MOFED's peer-memory ib_core now: a MOFED/DOCA-OFED stack loaded, MLNX_OFED, or
    DOCA-OFED installed with its kernel modules (a user-space-only profile brings none)."""
    doca = doca or {}
    if doca.get("loaded") == "ofed" or doca.get("kind") == "mlnx_ofed":
        return True
    if doca.get("kind") != "doca_ofed":
        return False
    profiles = [str(p) for p in doca.get("profiles") or []]
    return not profiles or any(not p.endswith("-userspace") for p in profiles)


def mofed_planned(values: Mapping[str, Any], doca: Optional[Mapping[str, Any]]) -> bool:
    """MOFED's peer-memory ib_core is there after the host layer: installed now, or DOCA-OFED with kernel modules."""
    if mofed_installed(doca):
        return True
    if values.get("gpudirect_rdma_mofed") is not None:
        return bool(values["gpudirect_rdma_mofed"])
    return bool(values.get("gpufabric_doca_ofed_enabled")) and str(values.get("doca_ofed_profile", "")).endswith(
        ("ofed", "roce")
    )


def gpudirect_section(
    values: Mapping[str, Any], gpudirect: Mapping[str, Any], mofed: bool, problems: List[str]
) -> Dict[str, Any]:
    facts = dict(gpudirect or {})
    facts["mofed"] = mofed
    decision = _gpudirect.decide(facts, values.get("gpudirect_rdma_method") or "auto")
    if decision["error"]:
        problems.append(
            "gpudirect_rdma_method: {} is not possible on this node: {} (driver {} {} {}, kernel {}, MOFED {})".format(
                values.get("gpudirect_rdma_method"),
                decision["error"],
                facts.get("driver_flavour"),
                facts.get("driver_version"),
                facts.get("driver_origin") or "",
                facts.get("kernel_release"),
                "planned"
                if mofed
                else "absent: none is installed and gpufabric_doca_ofed_enabled/doca_ofed_profile plan none",
            )
        )
    return {
        "method": decision["method"],
        "driver": {"flavour": facts.get("driver_flavour"), "version": facts.get("driver_version")},
        "reasons": decision["reasons"],
        "cuda_version": decision["cuda_version"],
        "gpu_archs": decision["gpu_archs"],
        "mofed": mofed,
        "memlock": str(values.get("gpudirect_rdma_memlock") or ""),
        # The services whose running process must have that limit (the container runtimes): the
        # validate role reads their effective limit back.
        "memlock_units": (
            list(values.get("gpudirect_rdma_memlock_units") or [])
            if values.get("gpudirect_rdma_memlock") and values.get("gpudirect_rdma_memlock_systemd", True)
            else []
        ),
        "decision": decision,
    }


def gds_section(
    values: Mapping[str, Any],
    decision: Mapping[str, Any],
    gpudirect: Mapping[str, Any],
    topology: Mapping[str, Any],
    problems: List[str],
    storage: Optional[Mapping[str, Any]] = None,
) -> Optional[Dict[str, Any]]:
    if not values.get("gpufabric_gds_enabled"):
        return None
    mode = values.get("gpudirect_storage_mode")
    gds = decision.get("gds") or {}
    blockers: List[str] = []
    if mode == "nvidia_fs" and not gds.get("nvidia_fs_ok"):
        blockers = list(gds.get("nvidia_fs_blockers") or [])
    elif mode == "p2pdma" and not gds.get("p2pdma_ok"):
        blockers = list(gds.get("p2pdma_blockers") or [])
    if not gpudirect.get("driver_version"):
        blockers.append("no NVIDIA driver loaded")
    if not topology.get("gpus"):
        blockers.append("no NVIDIA GPU found")
    if blockers:
        problems.append(
            f"gpudirect_storage_mode: {mode} is not possible on this node: {'; '.join(blockers)} "
            f"(driver {gpudirect.get('driver_flavour')} {gpudirect.get('driver_version')} "
            f"{gpudirect.get('driver_origin') or ''}); compat needs only libcufile, or set gpufabric_gds_enabled: false"
        )
    iommu_on = bool((topology.get("iommu") or {}).get("enabled"))
    if iommu_on and mode != "compat" and values.get("gpudirect_storage_iommu_policy") == "fail":
        problems.append(
            "gpudirect_storage_iommu_policy: fail, and the IOMMU is on; GDS peer-to-peer DMA needs it off or in "
            "passthrough (intel_iommu=off / amd_iommu=off or iommu=pt on the kernel command line), or set warn"
        )
    roles = list(values.get("gpudirect_storage_rdma_nic_roles") or [])
    explicit = list(values.get("gpudirect_storage_rdma_dev_addr_list") or [])
    addrs: List[str] = explicit
    if not explicit and (storage or {}).get("cufile_addresses"):
        # gpufabric_storage names the NICs that carry the GDS filesystems; they are cuFile's client addresses.
        addrs = list(storage["cufile_addresses"])
    elif not explicit:
        addrs = []
        for nic in topology.get("nics") or []:
            if nic.get("role") not in roles:
                continue
            for port in nic.get("ports") or []:
                ipv4 = (port.get("roce_v2_ipv4") or {}).get("ipv4")
                if ipv4 and ipv4 not in addrs:
                    addrs.append(ipv4)
    sections: Dict[str, Any] = {}
    for name, section in (values.get("gpudirect_storage_filesystems") or {}).items():
        section = dict(section or {})
        if section.get("rdma_dev_addr_list") == "discovered":
            if not addrs:
                problems.append(
                    f"gpudirect_storage_filesystems.{name}.rdma_dev_addr_list: 'discovered', but no NIC with role "
                    f"{'/'.join(roles) or '(none)'} has a RoCE v2 IPv4 address; "
                    "set gpudirect_storage_rdma_dev_addr_list"
                )
            section["rdma_dev_addr_list"] = list(addrs)
        sections[name] = section
    for name, planned in ((storage or {}).get("cufile") or {}).items():
        for key in sorted(set(planned) & set(sections.get(name) or {})):
            problems.append(
                f"gpudirect_storage_filesystems.{name}.{key}: is planned from gpufabric_storage (the NICs that serve "
                f"each {name} filesystem); remove it here"
            )
        sections[name] = {**(sections.get(name) or {}), **planned}
    return {
        "mode": mode,
        "iommu_on": iommu_on,
        "iommu_warning": iommu_on and mode != "compat" and values.get("gpudirect_storage_iommu_policy") == "warn",
        "rdma_dev_addr_list": addrs,
        "filesystems": sections,
        "compat_mode": bool(values.get("gpudirect_storage_compat_mode")) or mode == "compat",
        "force_compat_mode": bool(values.get("gpudirect_storage_force_compat_mode")) or mode == "compat",
        "use_pci_p2pdma": mode == "p2pdma",
    }


def doca_repo(values: Mapping[str, Any], ansible: Mapping[str, Any]) -> str:
    """The DOCA repository URL (full URL when given, else composed from its pieces and the OS)."""
    if values.get("doca_ofed_repo_url"):
        return str(values["doca_ofed_repo_url"])
    os_tok = values.get("doca_ofed_repo_os") or _doca.os_token(
        ansible.get("distribution"), ansible.get("distribution_version")
    )
    arch_tok = values.get("doca_ofed_repo_arch") or _doca.arch_token(ansible.get("architecture"))
    release = values.get("doca_ofed_repo_release") or str(values.get("doca_ofed_version", "")).split("-", maxsplit=1)[0]
    return _doca.repo_url(values.get("doca_ofed_repo_base_url"), release, os_tok, arch_tok)


def doca_section(
    values: Mapping[str, Any],
    ansible: Mapping[str, Any],
    doca: Mapping[str, Any],
    index: Optional[Mapping[str, Any]],
    problems: List[str],
) -> Optional[Dict[str, Any]]:
    if not values.get("gpufabric_doca_ofed_enabled"):
        return None
    try:
        repo = doca_repo(values, ansible)
        profile = _doca.profile_packages(
            values.get("doca_ofed_profile"),
            values.get("doca_ofed_storage_components") or [],
            ansible.get("kernel") or "",
            ansible.get("os_family") or "Debian",
        )
    except _doca.DocaError as exc:
        problems.append(str(exc))
        return None
    if ansible.get("os_family") not in ("Debian", "RedHat"):
        problems.append(
            f"gpufabric_doca_ofed_enabled: true, but {ansible.get('os_family')} is neither Debian nor RedHat"
        )
    if (doca or {}).get("kind") == "mlnx_ofed" and not values.get("doca_ofed_replace_mlnx_ofed"):
        problems.append(
            "doca_ofed_replace_mlnx_ofed: false, and this node runs a standalone MLNX_OFED "
            f"{(doca or {}).get('installed_release') or '(unknown version)'}; uninstall it first or set it to true"
        )
    section: Dict[str, Any] = {"repo_url": repo, "profile": profile}
    if values.get("doca_ofed_gpg_check") is False:
        section["unsigned"] = True  # acknowledged (doca_ofed_insecure_repo_acknowledged); the summary says so
    if index is None:
        return section
    packages = index.get("packages") or {}
    meta = profile["metapackage"]
    try:
        selected = _doca_index.select_version(packages, meta, values.get("doca_ofed_version"))
    except _doca.DocaError as exc:
        problems.append(f"{exc} (repository {repo})")
        return section
    components = _doca_index.exact_dependencies(((index.get("depends") or {}).get(meta) or {}).get(selected) or "")
    kernel_version = components.get("mlnx-ofed-kernel-dkms", "")
    for extra in profile["install"][1:]:
        if ansible.get("os_family") == "Debian" and kernel_version not in (packages.get(extra) or []):
            problems.append(
                f"doca_ofed_storage_components: {extra} {kernel_version} (the kernel package version of {meta} "
                f"{selected}) is not in {repo}"
            )
    section.update(
        {
            "selected": selected,
            "components": components,
            "kernel_version": kernel_version,
            "expected_release": _doca_stack.ofed_release_from_dkms_version(kernel_version) if kernel_version else "",
        }
    )
    return section
