# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of the network intent: the fabric (DSCP, ToS, ECN, priorities, MTU), the node's scalars, the
cluster's rails and Kubernetes networks, the roce role's variables (ETS included) and GPUDirect's.
Called from ``intent.rules`` (NODE_RULES, CLUSTER_RULES); each takes the normalised values and appends problems.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show, unknown_message
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import (
    Problems,
    any_network,
    dns_label,
    dns_subdomain,
    in_range,
    ipv4_network,
    is_int,
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

ECT0 = 0b10  # the ECN field of a RoCE packet marked ECN-capable (RFC 3168 ECT(0))
CNI_VERSIONS = ("0.3.1", "0.4.0", "1.0.0")


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
