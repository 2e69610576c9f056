# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ranges and rules across fields of the collection's variables, run after ``_intent.check``.

Argument specs give types, choices and defaults; what they cannot say lives here, once: ranges,
formats (CIDRs, DNS names, versions) and rules that tie two values together (the ToS byte and
the DSCP, the CNP priority and the lossless priority, render mode and its directory, ...). Every
function takes the normalised values (defaults filled) and returns problems, each naming the
variable path, the value and what is allowed. Rules that need discovered hardware (a NIC named
in ``roce_interfaces`` must exist) are the planner's, not these.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import storage as _storage_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show, unknown_message
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import (
    CHART_VERSION_RE,
    Problems,
    any_network,
    dns_label,
    dns_subdomain,
    in_range,
    ipv4_network,
    is_int,
    keyring_file,
    version,
)

# The NIC's limits, one definition each: the mlx5 driver's maximum MTU; from the parsers 8 priorities,
# the ETS schedulers, the RoCE header overhead behind the smallest MTU that carries RoCE MTU 4096.
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.mlx5 import MAX_MTU
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import (
    MIN_MTU_FOR_4096,
    NUM_PRIO,
    TSA_NAMES,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import image_ref as _image_ref
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import k8s_labels as _k8s_labels
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import network_operator as _network_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import signing_key as _signing_key

ECT0 = 0b10  # the ECN field of a RoCE packet marked ECN-capable (RFC 3168 ECT(0))
CNI_VERSIONS = ("0.3.1", "0.4.0", "1.0.0")

Rule = Callable[[Mapping[str, Any], Problems], None]
GivenRule = Callable[[Mapping[str, Any], Mapping[str, Any], Problems], None]


def tos_for(fabric: Mapping[str, Any]) -> int:
    """The RoCE ToS byte the fabric intent stands for: DSCP << 2, ECT(0) when ECN is on."""
    return (int(fabric["data_dscp"]) << 2) | (ECT0 if fabric.get("ecn") else 0)


# --------------------------------------------------------------------------------------------- node intent
def fabric_rules(values: Mapping[str, Any], problems: Problems) -> None:
    fab = values.get("gpufabric_fabric")
    if not isinstance(fab, Mapping):
        return
    p = "gpufabric_fabric."
    prio = in_range(problems, p + "lossless_priority", fab.get("lossless_priority"), 0, NUM_PRIO - 1)
    cnp_prio = in_range(problems, p + "cnp_priority", fab.get("cnp_priority"), 0, NUM_PRIO - 1)
    dscp = in_range(problems, p + "data_dscp", fab.get("data_dscp"), 0, 63)
    cnp_dscp = in_range(problems, p + "cnp_dscp", fab.get("cnp_dscp"), 0, 63)
    in_range(problems, p + "mtu", fab.get("mtu"), MIN_MTU_FOR_4096, MAX_MTU)
    if prio and cnp_prio and fab["cnp_priority"] == fab["lossless_priority"]:
        problems.append(
            f"{p}cnp_priority: {fab['cnp_priority']} equals {p}lossless_priority; CNPs must not be paused by PFC, "
            "choose another priority"
        )
    if dscp and cnp_dscp and fab["cnp_dscp"] == fab["data_dscp"]:
        problems.append(f"{p}cnp_dscp: {fab['cnp_dscp']} equals {p}data_dscp; CNPs need their own DSCP")
    tos = fab.get("roce_tos")
    if (
        tos is not None
        and in_range(problems, p + "roce_tos", tos, 0, 255)
        and dscp
        and isinstance(fab.get("ecn"), bool)
    ):
        want = tos_for(fab)
        if tos != want:
            problems.append(
                f"{p}roce_tos: {tos} disagrees with data_dscp {fab['data_dscp']} and ecn {str(fab['ecn']).lower()}; "
                f"the ToS byte must be {want} (data_dscp << 2{' | ECT(0)' if fab['ecn'] else ''}); leave roce_tos "
                "unset to derive it"
            )


def node_scalar_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "gpufabric_nccl_version" in values:
        version(problems, "gpufabric_nccl_version", values.get("gpufabric_nccl_version"))
    sysroot = values.get("gpufabric_sysroot")
    if "gpufabric_sysroot" in values and not (isinstance(sysroot, str) and sysroot.startswith("/")):
        problems.append(f"gpufabric_sysroot: {show(sysroot)} is not an absolute path")
    name = values.get("gpufabric_k8s_node_name")
    if "gpufabric_k8s_node_name" in values:
        dns_subdomain(problems, "gpufabric_k8s_node_name", name)


# --------------------------------------------------------------------------------------------- cluster intent
def _cidrs(values: Mapping[str, Any], problems: Problems) -> List[Tuple[str, Any]]:
    out = []
    cidrs = values.get("gpufabric_cluster_cidrs")
    if not isinstance(cidrs, Mapping):
        return out
    for key in ("pod", "service"):
        for index, item in enumerate(cidrs.get(key) or []):
            net = any_network(problems, f"gpufabric_cluster_cidrs.{key}[{index}]", item)
            if net is not None:
                out.append((f"gpufabric_cluster_cidrs.{key} {net}", net))
    return out


def rails_rules(values: Mapping[str, Any], problems: Problems) -> None:
    rails = values.get("gpufabric_rails")
    cluster = _cidrs(values, problems)
    if not isinstance(rails, Mapping):
        return
    p = "gpufabric_rails."
    in_range(problems, p + "rail_prefix", rails.get("rail_prefix"), 8, 30)
    in_range(problems, p + "block_size", rails.get("block_size"), 1, 65536)
    if rails.get("per_node_prefix") is not None:
        in_range(problems, p + "per_node_prefix", rails.get("per_node_prefix"), 8, 32)
    in_range(problems, p + "rdma_hca_max", rails.get("rdma_hca_max"), 1, 1000)
    in_range(problems, p + "sriov_num_vfs", rails.get("sriov_num_vfs"), 1, 255)
    if rails.get("min_rails") is not None:
        in_range(problems, p + "min_rails", rails.get("min_rails"), 1, 64)
    for key in ("pool_namespace", "nad_namespace"):
        dns_label(problems, p + key, rails.get(key))
    for key in ("label_prefix", "resource_prefix", "sriov_resource_prefix"):
        dns_subdomain(problems, p + key, rails.get(key))
    prefix = rails.get("name_prefix")
    if not (isinstance(prefix, str) and re.fullmatch(r"^[a-z]([-a-z0-9]{0,50})$", prefix)):
        problems.append(
            f"{p}name_prefix: {show(prefix)} must start a DNS label: a lower-case letter, then up to 50 lower-case "
            "letters, digits or '-'"
        )
    if not (isinstance(rails.get("socket_ifname"), str) and rails["socket_ifname"].strip("=^")):
        problems.append(f"{p}socket_ifname: {show(rails.get('socket_ifname'))} names no interface")
    if rails.get("cni_version") not in CNI_VERSIONS:
        problems.append(
            f"{p}cni_version: {show(rails.get('cni_version'))} is not allowed; allowed: {', '.join(CNI_VERSIONS)}"
        )
    named: List[Tuple[str, Any]] = []
    if rails.get("supernet") is not None:
        net = ipv4_network(problems, p + "supernet", rails["supernet"])
        if net is not None:
            named.append((f"{p}supernet {net}", net))
    seen_rail: Dict[int, int] = {}
    seen_name: Dict[str, int] = {}
    for index, item in enumerate(rails.get("rails") or []):
        if not isinstance(item, Mapping):
            continue
        q = f"{p}rails[{index}]."
        if in_range(problems, q + "rail", item.get("rail"), 0, 63):
            if item["rail"] in seen_rail:
                problems.append(f"{q}rail: index {item['rail']} is already used by rails[{seen_rail[item['rail']]}]")
            seen_rail.setdefault(item["rail"], index)
        if item.get("name") is not None and dns_label(problems, q + "name", item["name"]):
            if item["name"] in seen_name:
                problems.append(f"{q}name: {item['name']!r} is already used by rails[{seen_name[item['name']]}]")
            seen_name.setdefault(item["name"], index)
        if item.get("vlan") is not None:
            in_range(problems, q + "vlan", item["vlan"], 1, 4094)
        if item.get("mtu") is not None:
            in_range(problems, q + "mtu", item["mtu"], 1280, MAX_MTU)
        if item.get("block_size") is not None:
            in_range(problems, q + "block_size", item["block_size"], 1, 65536)
        if item.get("subnet") is not None:
            net = ipv4_network(problems, q + "subnet", item["subnet"])
            if net is not None:
                named.append((f"{q}subnet {net}", net))
        kind = item.get("nad_type") or rails.get("nad_type")
        if item.get("vlan") is not None and kind == "host-device":
            problems.append(f"{q}vlan: a host-device rail cannot have a VLAN (the whole netdev moves into the Pod)")
    for name, net in named:
        for other, onet in cluster:
            if net.version == onet.version and net.overlaps(onet):
                problems.append(
                    f"{name.split(' ')[0]}: {net} overlaps {other}; rail networks must not overlap the cluster's own"
                )
    for i, (name, net) in enumerate(named):
        for other, onet in named[i + 1 :]:
            if net.overlaps(onet) and not name.startswith(p + "supernet"):
                problems.append(f"{name.split(' ')[0]}: {net} overlaps {other.split(' ')[0]} {onet}")


def k8s_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if values.get("gpufabric_k8s_mode") == "render" and not values.get("gpufabric_k8s_render_dir"):
        problems.append("gpufabric_k8s_render_dir: is required when gpufabric_k8s_mode is render")
    # The cluster check runs on the controller, where the cluster roles read the kubeconfig: a
    # missing file would otherwise be found only after the host layer had changed the nodes.
    kubeconfig = values.get("gpufabric_kubeconfig")
    if values.get("gpufabric_k8s_mode") == "apply" and kubeconfig and not os.path.isfile(str(kubeconfig)):
        what = "is not a file" if os.path.exists(str(kubeconfig)) else "does not exist"
        problems.append(
            f"gpufabric_kubeconfig: {show(kubeconfig)} {what} on the controller; gpufabric_k8s_mode apply reaches "
            "the API server with it. Give an existing kubeconfig, leave the variable unset for the kubernetes "
            "client's own search (KUBECONFIG, ~/.kube/config), or set gpufabric_k8s_mode: render"
        )


# --------------------------------------------------------------------------------------------- role variables
def roce_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "roce_backend" not in values:
        return
    fab = values.get("gpufabric_fabric") if isinstance(values.get("gpufabric_fabric"), Mapping) else {}
    lossless = fab.get("lossless_priority")
    cnp = fab.get("cnp_priority")
    for name in ("roce_pfc_priorities", "roce_ecn_priorities"):
        for index, prio in enumerate(values.get(name) or []):
            in_range(problems, f"{name}[{index}]", prio, 0, NUM_PRIO - 1)
    for prio in values.get("roce_pfc_priorities") or []:
        if not (is_int(prio) and 0 <= prio < NUM_PRIO):
            continue
        if is_int(lossless) and prio != lossless and not values.get("roce_allow_pfc_on_other_priorities"):
            problems.append(
                f"roce_pfc_priorities: enables PFC on priority {prio}, which is not gpufabric_fabric.lossless_priority "
                f"({lossless}); set roce_allow_pfc_on_other_priorities: true if the switches are configured for it"
            )
        if is_int(cnp) and prio == cnp:
            problems.append(
                f"roce_pfc_priorities: enables PFC on the CNP priority {prio} (gpufabric_fabric.cnp_priority)"
            )
    if values.get("roce_pfc_priorities") and fab.get("pfc") is False:
        problems.append("roce_pfc_priorities: is set but gpufabric_fabric.pfc is false")
    if values.get("roce_default_priority") is not None:
        in_range(problems, "roce_default_priority", values["roce_default_priority"], 0, NUM_PRIO - 1)
    if values.get("roce_cable_len") is not None:
        in_range(problems, "roce_cable_len", values["roce_cable_len"], 0, 0xFFFF)
    _ets_rules(values.get("roce_ets") or {}, problems)
    sizes = values.get("roce_buffer_size") or []
    p2b = values.get("roce_prio2buffer") or []
    if sizes and (len(sizes) != NUM_PRIO or not all(is_int(x) and x >= 0 for x in sizes)):
        problems.append(f"roce_buffer_size: {show(sizes)} must list 8 non-negative byte sizes, one per buffer")
    if p2b and (len(p2b) != NUM_PRIO or not all(is_int(x) and 0 <= x < NUM_PRIO for x in p2b)):
        problems.append(f"roce_prio2buffer: {show(p2b)} must list 8 buffer indexes 0-7, one per priority")
    if len(sizes) == NUM_PRIO and len(p2b) == NUM_PRIO and is_int(lossless) and 0 <= lossless < NUM_PRIO:
        buf = p2b[lossless]
        if is_int(buf) and 0 <= buf < NUM_PRIO and sizes[buf] == 0:
            problems.append(
                f"roce_buffer_size: gives 0 bytes to buffer {buf}, "
                "which roce_prio2buffer assigns to the lossless priority"
            )
    mask = values.get("roce_acs_clear_mask")
    if mask is not None and not (is_int(mask) and 0 < mask <= 0x7F):
        problems.append(f"roce_acs_clear_mask: {show(mask)} is not an ACS control bit mask; allowed: 1-127 (0x01-0x7f)")


def _ets_rules(ets: Mapping[str, Any], problems: Problems) -> None:
    if not ets:
        return
    unknown = sorted(set(ets) - {"prio_tc", "tsa", "tc_bw"})
    for key in unknown:
        problems.append(unknown_message("roce_ets", key, ("prio_tc", "tsa", "tc_bw")))
    prio_tc = ets.get("prio_tc") or []
    tsa = ets.get("tsa") or []
    bw = ets.get("tc_bw") or []
    if len(prio_tc) != NUM_PRIO or not all(is_int(x) and 0 <= x < NUM_PRIO for x in prio_tc):
        problems.append(f"roce_ets.prio_tc: {show(prio_tc)} must list 8 traffic classes 0-7, one per priority")
    if len(tsa) != NUM_PRIO or not all(x in TSA_NAMES for x in tsa):
        problems.append(f"roce_ets.tsa: {show(tsa)} must list 8 of {', '.join(TSA_NAMES)}")
    if len(bw) != NUM_PRIO or not all(is_int(x) and 0 <= x <= 100 for x in bw):
        problems.append(f"roce_ets.tc_bw: {show(bw)} must list 8 percentages 0-100")
    elif len(tsa) == NUM_PRIO and all(x in TSA_NAMES for x in tsa):
        ets_bw = [b for b, t in zip(bw, tsa) if t == "ets"]
        if ets_bw and sum(ets_bw) != 100:
            problems.append(f"roce_ets.tc_bw: the ets classes' shares sum to {sum(ets_bw)}; they must sum to 100")
        if any(b for b, t in zip(bw, tsa) if t != "ets"):
            problems.append("roce_ets.tc_bw: must be 0 for classes whose tsa is not ets")


def gpudirect_rules(values: Mapping[str, Any], problems: Problems) -> None:
    memlock = values.get("gpudirect_rdma_memlock")
    if "gpudirect_rdma_memlock" in values and not re.fullmatch(r"^(|unlimited|[0-9]{1,12})$", str(memlock)):
        problems.append(
            f"gpudirect_rdma_memlock: {show(memlock)} is not allowed; allowed: unlimited, a size in KiB, or ''"
        )
    # Written into limits.d and systemd unit paths as root: names only, no spaces, no newlines.
    for index, who in enumerate(values.get("gpudirect_rdma_memlock_principals") or []):
        if not re.fullmatch(r"\*|@?[a-z_][a-z0-9_.-]{0,31}", str(who)):
            problems.append(
                f"gpudirect_rdma_memlock_principals[{index}]: {show(who)} is not a user, @group or * of limits.conf"
            )
    for index, unit in enumerate(values.get("gpudirect_rdma_memlock_units") or []):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9:_.@-]{0,200}\.service", str(unit)):
            problems.append(f"gpudirect_rdma_memlock_units[{index}]: {show(unit)} is not a systemd service name")
    cuda = values.get("gpudirect_storage_cuda_version")
    if "gpudirect_storage_cuda_version" in values and not re.fullmatch(r"^[0-9]{1,3}\.[0-9]{1,3}$", str(cuda)):
        problems.append(f"gpudirect_storage_cuda_version: {show(cuda)} is not a CUDA release like 13.0")
    cuda = values.get("gpudirect_rdma_cuda_version")
    if cuda and not re.fullmatch(r"^[0-9]{1,3}\.[0-9]{1,3}$", str(cuda)):
        problems.append(f"gpudirect_rdma_cuda_version: {show(cuda)} is not a CUDA release like 13.0 (or '' to detect)")


def doca_rules(values: Mapping[str, Any], problems: Problems) -> None:
    ver = values.get("doca_ofed_version")
    if "doca_ofed_version" in values and not re.fullmatch(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.+~]+)?$", str(ver)):
        problems.append(
            f"doca_ofed_version: {show(ver)} is not a DOCA release like 2.9.1 or an exact version like 2.9.1-0.1.4"
        )
    # Without the signature check, apt trusts whatever the repository (or anyone between) serves, as root.
    if values.get("doca_ofed_gpg_check") is False and values.get("doca_ofed_insecure_repo_acknowledged") is not True:
        problems.append(
            "doca_ofed_gpg_check: false makes the DOCA repository trusted without a signature ([trusted=yes], "
            "gpgcheck=0); set doca_ofed_insecure_repo_acknowledged: true to accept that, or keep "
            "doca_ofed_gpg_check: true (allowed with false: only doca_ofed_insecure_repo_acknowledged: true)"
        )
    if (
        values.get("gpufabric_doca_ofed_enabled")
        and values.get("doca_ofed_gpg_check") is not False
        and "doca_ofed_gpg_key_fingerprints" in values
        and not values.get("doca_ofed_gpg_key_fingerprints")
    ):
        problems.append(
            "doca_ofed_gpg_key_fingerprints: is empty; pin the fingerprint of the DOCA repository's signing key "
            "(GPG-KEY-Mellanox.pub; allowed: a list of 40-hex-digit fingerprints, as gpg --show-keys prints them "
            "for the key you verified with NVIDIA), or the key is refused before anything is installed"
        )
    if values.get("doca_ofed_k8s_drain") == "always" and not values.get("gpufabric_kubeconfig"):
        problems.append("doca_ofed_k8s_drain: 'always' needs gpufabric_kubeconfig (the cluster to drain the node in)")
    for key in ("doca_ofed_reboot_timeout", "doca_ofed_k8s_drain_timeout", "doca_ofed_k8s_drain_retry_delay"):
        if values.get(key) is not None:
            in_range(problems, key, values[key], 1, 86400)


SIGNING_KEY_PINS = (
    "doca_ofed_gpg_key_fingerprints",
    "gpu_driver_repo_key_fingerprints",
    "gpudirect_storage_repo_key_fingerprints",
    "storage_client_lustre_repo_key_fingerprints",
    "storage_client_gpfs_repo_key_fingerprints",
)


def signing_key_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """Each pinned repository key is a whole fingerprint: a short key ID is forged in minutes."""
    for key in SIGNING_KEY_PINS:
        for index, value in enumerate(values.get(key) or []):
            if _signing_key.normalise_fingerprint(value) is None:
                problems.append(
                    f"{key}[{index}]: {show(value)} is not a key fingerprint; allowed: 40 hexadecimal digits "
                    "(spaces allowed), as gpg --show-keys --fingerprint prints them; a short key ID pins nothing"
                )


def nccl_config_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if values.get("nccl_config_topo_xml_source") == "file" and not values.get("nccl_config_topo_xml_src"):
        problems.append("nccl_config_topo_xml_src: is required when nccl_config_topo_xml_source is file")
    gid = values.get("nccl_config_ib_gid_index")
    if gid is not None:
        in_range(problems, "nccl_config_ib_gid_index", gid, -1, 255)
    for key in values.get("nccl_config_extra") or {}:
        if not re.fullmatch(r"^NCCL_[A-Z0-9_]+$", str(key)):
            problems.append(
                f"nccl_config_extra: {show(key)} is not an NCCL variable name (NCCL_ followed by A-Z, 0-9, _)"
            )


DRIVER_VERSION_RE = re.compile(r"^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$")


def gpu_driver_rules(values: Mapping[str, Any], problems: Problems) -> None:
    for key in ("gpu_driver_k8s_drain_timeout", "gpu_driver_k8s_drain_retry_delay"):
        if values.get(key) is not None:
            in_range(problems, key, values[key], 1, 86400)
    driver = values.get("gpufabric_gpu_driver")
    if not isinstance(driver, Mapping):
        return
    p = "gpufabric_gpu_driver."
    version_text = driver.get("version") or ""
    if version_text and not DRIVER_VERSION_RE.fullmatch(str(version_text)):
        problems.append(f"{p}version: {show(version_text)} is not an NVIDIA driver version like 580.95.05")
    if driver.get("managed_by") == "operator" and not version_text:
        problems.append(
            f"{p}version: is required when {p}managed_by is operator (the driver container tag the GPU Operator "
            "deploys, e.g. 580.95.05)"
        )
    for index, name in enumerate(driver.get("packages") or []):
        if not re.fullmatch(r"^[a-z0-9][a-z0-9+.-]+$", str(name)):
            problems.append(f"{p}packages[{index}]: {show(name)} is not a package name")
    if driver.get("packages") and not version_text:
        problems.append(
            f"{p}version: is required with {p}packages (the driver version the packages are installed at, "
            "e.g. 580.95.05)"
        )
    if driver.get("managed_by") == "host" and driver.get("precompiled"):
        problems.append(
            f"{p}precompiled: true applies to the GPU Operator's driver, but {p}managed_by is host; "
            "set managed_by: operator or precompiled: false"
        )


def topology_rules(values: Mapping[str, Any], problems: Problems) -> None:
    path = values.get("topology_report_dir")
    if "topology_report_dir" in values and not (isinstance(path, str) and path.startswith("/")):
        problems.append(f"topology_report_dir: {show(path)} must be an absolute path on the node")


def chart_rules(values: Mapping[str, Any], problems: Problems) -> None:
    for role in ("network_operator", "gpu_operator"):
        ver = values.get(f"{role}_chart_version")
        path = values.get(f"{role}_chart_path")
        if f"{role}_chart_version" in values and not CHART_VERSION_RE.fullmatch(str(ver)):
            problems.append(f"{role}_chart_version: {show(ver)} must be a pinned chart version such as 26.4.1")
        elif role == "network_operator" and f"{role}_chart_version" in values:
            outside = _network_operator.range_problem(f"{role}_chart_version", ver)
            if outside:
                problems.append(outside)
        if (
            f"{role}_chart_path" in values
            and not path
            and not (values.get(f"{role}_chart_repo_url") and values.get(f"{role}_chart_name"))
        ):
            problems.append(
                f"{role}_chart_path: is empty and {role}_chart_repo_url / {role}_chart_name are not both set"
            )
        keyring_file(problems, f"{role}_chart_keyring", values.get(f"{role}_chart_keyring"))
        timeout = values.get(f"{role}_wait_timeout")
        if timeout is not None:
            in_range(problems, f"{role}_wait_timeout", timeout, 1, 86400)
        delay = values.get(f"{role}_wait_delay")
        if delay is not None:
            in_range(problems, f"{role}_wait_delay", delay, 1, 3600)


# The oldest GPU Operator chart whose values the gpu_operator planner writes (v24.9.0: the
# nvidiaDriverCRD.deployDefaultCR switch; driver.useOpenKernelModules until v25.3.0).
GPU_OPERATOR_MIN_CHART = (24, 9, 0)
REGISTRY_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)*$")


def gpu_operator_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "gpu_operator_chart_version" not in values:
        return
    chart = str(values.get("gpu_operator_chart_version") or "")
    match = CHART_VERSION_RE.fullmatch(chart)
    if match and tuple(int(x) for x in match.groups()[:3]) < GPU_OPERATOR_MIN_CHART:
        problems.append(
            f"gpu_operator_chart_version: {show(chart)} is older than v24.9.0, the oldest chart whose values "
            "this role writes"
        )
    registry = values.get("gpu_operator_image_registry") or ""
    if registry and not REGISTRY_RE.fullmatch(str(registry)):
        problems.append(
            f"gpu_operator_image_registry: {show(registry)} is not a registry host[:port][/path] without a scheme "
            "or a trailing slash, like registry.example.com:5000/mirror"
        )
    gds = values.get("gpu_operator_gds_version")
    if "gpu_operator_gds_version" in values and not re.fullmatch(r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$", str(gds)):
        problems.append(f"gpu_operator_gds_version: {show(gds)} is not an nvidia-fs image tag like 2.29.4")
    for index, name in enumerate(values.get("gpu_operator_image_pull_secrets") or []):
        dns_subdomain(problems, f"gpu_operator_image_pull_secrets[{index}]", name)
    dns_label(problems, "gpu_operator_namespace", values.get("gpu_operator_namespace"))


VALIDATE_FRACTIONS = (
    "validate_rdma_fraction",
    "validate_nccl_efficiency",
    "validate_nccl_fraction",
    "validate_gds_fraction",
    "validate_pcie_fraction",
    "validate_hbm_fraction",
    "validate_nvlink_fraction",
)
SIZE_RE = re.compile(r"^([0-9]{1,12})([KMG]?)$")
MAX_RAILS = 64


def size_bytes(problems: Problems, path: str, value: Any) -> Optional[int]:
    """A size like 1M or 8G (K, M, G: powers of 1024, as nccl-tests and gdsio read them)."""
    match = SIZE_RE.fullmatch(str(value)) if value is not None else None
    if not match or int(match.group(1)) == 0:
        problems.append(
            f"{path}: {show(value)} is not a size like 512K, 1M or 8G (a positive number, optional K, M, G)"
        )
        return None
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]


def validate_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "validate_rdma_fraction" not in values:
        return
    for name in VALIDATE_FRACTIONS:
        value = values.get(name)
        if value is not None and not 0 < value <= 1:
            # Each gate is a fraction of a ceiling (line rate, datasheet, raw link): above 1 it can never pass.
            problems.append(
                f"{name}: {show(value)} is out of range; allowed: above 0 and at most 1 "
                "(a fraction of the ceiling the gate measures against; above 1 the gate can never pass)"
            )
    in_range(problems, "validate_reuse_hours", values.get("validate_reuse_hours"), 0, 8760)
    in_range(problems, "validate_rdma_size", values.get("validate_rdma_size"), 1, 1 << 31)
    in_range(problems, "validate_rdma_duration", values.get("validate_rdma_duration"), 1, 3600)
    in_range(problems, "validate_rdma_timeout", values.get("validate_rdma_timeout"), 1, 86400)
    # Rail r uses base + 2r and base + 2r + 1 (GPU memory): every rail's ports must be valid.
    in_range(problems, "validate_rdma_base_port", values.get("validate_rdma_base_port"), 1024, 65535 - 2 * MAX_RAILS)
    in_range(problems, "validate_gds_gpu", values.get("validate_gds_gpu"), 0, 63)
    in_range(problems, "validate_gds_threads", values.get("validate_gds_threads"), 1, 1024)
    in_range(problems, "validate_gds_duration", values.get("validate_gds_duration"), 1, 3600)
    for name in ("validate_gds_file_size", "validate_gds_io_size"):
        size_bytes(problems, name, values.get(name))
    subdir = values.get("validate_gds_subdir")
    if not (isinstance(subdir, str) and subdir not in ("", ".", "..") and "/" not in subdir):
        problems.append(f"validate_gds_subdir: {show(subdir)} must be one directory name (no '/', not '.' or '..')")
    for index, item in enumerate(values.get("validate_gds_filesystems") or []):
        if not isinstance(item, Mapping):
            continue
        path = item.get("path")
        if path is not None and not str(path).startswith("/"):
            problems.append(f"validate_gds_filesystems[{index}].path: {show(path)} is not an absolute path")
        expected = item.get("expected_gbps")
        if expected is not None and not expected > 0:
            problems.append(f"validate_gds_filesystems[{index}].expected_gbps: {show(expected)} must be above 0")
    low = size_bytes(problems, "validate_nccl_min_bytes", values.get("validate_nccl_min_bytes"))
    high = size_bytes(problems, "validate_nccl_max_bytes", values.get("validate_nccl_max_bytes"))
    if low is not None and high is not None and high < low:
        problems.append(
            f"validate_nccl_max_bytes: {show(values.get('validate_nccl_max_bytes'))} is below validate_nccl_min_bytes "
            f"{show(values.get('validate_nccl_min_bytes'))}"
        )
    in_range(problems, "validate_nccl_iters", values.get("validate_nccl_iters"), 1, 10000)
    in_range(problems, "validate_nccl_timeout", values.get("validate_nccl_timeout"), 60, 86400)
    in_range(problems, "validate_nccl_ssh_port", values.get("validate_nccl_ssh_port"), 1024, 65535)
    image_problem = _image_ref.problem("validate_nccl_image", values.get("validate_nccl_image"))
    if image_problem:
        problems.append(image_problem)
    binary = values.get("validate_nccl_binary")
    if not (isinstance(binary, str) and binary.startswith("/")):
        problems.append(f"validate_nccl_binary: {show(binary)} must be an absolute path in the image")
    # The NCCL Jobs' own namespace (the Jobs, their Services and Secrets: proof/jobs.py)
    dns_label(problems, "validate_namespace", values.get("validate_namespace"))


def batch_size(problems: Problems, path: str, value: Any, of_what: str) -> None:
    """A play's serial: a number of nodes (1 or more) or a percentage (1%-100%)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*(%?)\s*", str(value)) if not isinstance(value, bool) else None
    if not match or int(match.group(1)) < 1 or (match.group(2) and int(match.group(1)) > 100):
        problems.append(
            f"{path}: {show(value)} is not a number of nodes (1 or more) or a percentage (1%-100%) of {of_what}"
        )


def batch_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """The host layer's batches (playbooks/hosts.yml serial) and its failure threshold."""
    if "gpufabric_batch_size" in values:
        batch_size(problems, "gpufabric_batch_size", values["gpufabric_batch_size"], "the GPU nodes in the run")
    if values.get("gpufabric_max_fail_percentage") is not None:
        in_range(problems, "gpufabric_max_fail_percentage", values["gpufabric_max_fail_percentage"], 0, 100)


def instance_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """gpufabric_instance: the label value every owned object carries (pruning selects on it)."""
    problem = _k8s_labels.instance_problem(values.get("gpufabric_instance"))
    if problem:
        problems.append(f"{problem}; set gpufabric_instance in group_vars/all")


def upgrade_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "gpufabric_upgrade_serial" in values:
        batch_size(problems, "gpufabric_upgrade_serial", values["gpufabric_upgrade_serial"], "the nodes to upgrade")
    for name, low, high in (
        ("gpufabric_upgrade_max_fail_percentage", 0, 100),
        ("gpufabric_upgrade_drain_timeout", 1, 86400),
        ("gpufabric_upgrade_drain_retry_delay", 1, 3600),
        ("gpufabric_upgrade_drain_grace_period", -1, 86400),
        ("gpufabric_upgrade_reboot_timeout", 60, 86400),
    ):
        if values.get(name) is not None:
            in_range(problems, name, values[name], low, high)
    if values.get("gpufabric_upgrade_drain_grace_period") == 0:
        problems.append(
            "gpufabric_upgrade_drain_grace_period: 0 is not allowed; -1 keeps the Pods' own grace period, or 1-86400"
        )


NODE_RULES: Sequence[Rule] = (
    fabric_rules,
    node_scalar_rules,
    batch_rules,
    _storage_rules.storage_rules,
    roce_rules,
    gpudirect_rules,
    doca_rules,
    nccl_config_rules,
    signing_key_rules,
    topology_rules,
    gpu_driver_rules,
    validate_rules,
)
# Rules about the variables as given (see intent.check.check_scope's given_rules).
NODE_GIVEN_RULES: Sequence[GivenRule] = (_storage_rules.storage_given_rules,)
CLUSTER_RULES: Sequence[Rule] = (
    rails_rules,
    k8s_rules,
    chart_rules,
    gpu_operator_rules,
    _storage_rules.storage_csi_rules,
    instance_rules,
)
UPGRADE_RULES: Sequence[Rule] = (upgrade_rules,)


def problems_of(values: Mapping[str, Any], rules: Sequence[Rule]) -> Problems:
    problems: Problems = []
    for rule in rules:
        rule(values, problems)
    return problems
