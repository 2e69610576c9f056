# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster networking plan: intent (`gpufabric_rails`) + topology facts of all GPU nodes -> objects.

Pure and typed. `plan_cluster()` returns node groups, per-rail resources / pools / NADs, node labels,
NCCL environment per node group and every Kubernetes object the cluster roles apply or render.
Invalid intent raises ClusterPlanError whose message names the rail (or node group) and the numbers.

Object shapes follow ../shared/docs/facts.md section 7 (NicClusterPolicy, NicNodePolicy, RDMA shared device
plugin config, nv-ipam IPPool/CIDRPool, NetworkAttachmentDefinition, whereabouts IPAM, SR-IOV operator CRs).
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils._ipplan import (
    IPPlanError,
    address,
    carve,
    check_gateway,
    check_ip_capacity,
    check_prefix_capacity,
    default_gateway,
    find_overlaps,
    network,
    prefix_for_block,
    require_netaddr,
    width,
)

NAD_TYPES = ("macvlan", "ipvlan", "host-device", "sriov")
IPAM_KINDS = ("nv-ipam-ippool", "nv-ipam-cidrpool", "whereabouts")
SHARED_TYPES = ("macvlan", "ipvlan", "host-device")

# CustomResourceDefinition name per custom kind the plan emits (spec.names.plural + "." + group).
CRD_NAMES = {
    "NicClusterPolicy": "nicclusterpolicies.mellanox.com",
    "NicNodePolicy": "nicnodepolicies.mellanox.com",
    "IPPool": "ippools.nv-ipam.nvidia.com",
    "CIDRPool": "cidrpools.nv-ipam.nvidia.com",
    "NetworkAttachmentDefinition": "network-attachment-definitions.k8s.cni.cncf.io",
    "SriovNetworkNodePolicy": "sriovnetworknodepolicies.sriovnetwork.openshift.io",
    "SriovNetwork": "sriovnetworks.sriovnetwork.openshift.io",
    "SriovNetworkPoolConfig": "sriovnetworkpoolconfigs.sriovnetwork.openshift.io",
}

DEFAULT_COMPONENTS = {
    # ImageSpec per NicClusterPolicy component; the network_operator role passes the pinned values it documents.
    "repository": "nvcr.io/nvidia/mellanox",
    "rdma_shared_device_plugin": {"image": "k8s-rdma-shared-dev-plugin", "version": "network-operator-v25.10.0"},
    "multus": {"image": "multus-cni", "version": "network-operator-v25.10.0"},
    "cni_plugins": {"image": "plugins", "version": "network-operator-v25.10.0"},
    "nv_ipam": {"image": "nvidia-k8s-ipam", "version": "network-operator-v25.10.0"},
}

DEFAULTS = {
    "nad_type": "macvlan",
    "ipam": "nv-ipam-ippool",
    "supernet": None,
    "rail_prefix": 20,
    "block_size": 32,
    "per_node_prefix": None,
    "name_prefix": "rail",
    "resource_prefix": "rdma",
    "sriov_resource_prefix": "nvidia.com",
    "pool_namespace": "nvidia-network-operator",
    "nad_namespace": "default",
    "macvlan_mode": "bridge",
    "ipvlan_mode": "l2",
    "rdma_hca_max": 63,
    "sriov_num_vfs": 8,
    "sriov_nad_owner": "sriovnetwork",
    "socket_ifname": "=eth0",
    "label_prefix": "gpufabric.io",
    "cni_version": "0.3.1",
    "rails": None,
}
RAIL_KEYS = ("rail", "name", "subnet", "gateway", "vlan", "mtu", "nad_type", "node_groups", "block_size")

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ClusterPlanError(ValueError):
    """Intent and discovered hardware do not make a valid cluster plan."""


# --------------------------------------------------------------------------------------------- helpers
def label_value(text: Any) -> str:
    """A Kubernetes label value from free text ("ConnectX-7" stays, "A100 80GB" -> "A100-80GB")."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text or "unknown")).strip("-_.")[:63].strip("-_.")
    return value or "unknown"


def dns_name(text: str) -> str:
    value = re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-")
    return value[:63].strip("-") or "x"


def version_tuple(text: Any) -> Tuple[int, ...]:
    parts = re.findall(r"\d+", str(text or "0"))
    return tuple(int(p) for p in parts[:3]) or (0,)


def _short_list(names: List[str], limit: int = 4) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:limit]), len(names) - limit)


def _node_rails(node: str, facts: Dict[str, Any]) -> Dict[int, Dict[str, Any]]:
    """rail index -> facts of the NIC serving it on this node (compute NICs with a rail)."""
    by_rail: Dict[int, Dict[str, Any]] = {}
    rail_netdev = {r.get("rail"): r.get("netdev") for r in facts.get("rails") or []}
    for nic in facts.get("nics") or []:
        rail = nic.get("rail")
        if rail is None:
            continue
        netdev = rail_netdev.get(rail) or (nic.get("netdevs") or [None])[0]
        port = None
        for p in nic.get("ports") or []:
            if p.get("netdev") == netdev or port is None:
                port = p
        by_rail[int(rail)] = {
            "rail": int(rail),
            "bdf": nic.get("bdf"),
            "vendor_id": str(nic.get("vendor_id") or ""),
            "device_id": str(nic.get("device_id") or ""),
            "model": nic.get("model") or "unknown",
            "driver": nic.get("driver") or "mlx5_core",
            "function": nic.get("function") or "pf",
            "numa_node": nic.get("numa_node"),
            "netdev": netdev,
            "rdma_device": nic.get("rdma_device"),
            "port": int((port or {}).get("port") or 1),
            "mtu": (port or {}).get("mtu"),
            "sriov": nic.get("sriov"),
        }
    return by_rail


# --------------------------------------------------------------------------------------------- intent
def normalize_intent(intent: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    intent = dict(intent or {})
    unknown = sorted(set(intent) - set(DEFAULTS))
    if unknown:
        raise ClusterPlanError(f"gpufabric_rails: unknown keys {unknown}; allowed: {sorted(DEFAULTS)}")
    out = dict(DEFAULTS)
    out.update({k: v for k, v in intent.items() if v is not None})
    if out["nad_type"] not in NAD_TYPES:
        raise ClusterPlanError(
            "gpufabric_rails.nad_type {!r} is not one of {}".format(out["nad_type"], list(NAD_TYPES))
        )
    if out["ipam"] not in IPAM_KINDS:
        raise ClusterPlanError("gpufabric_rails.ipam {!r} is not one of {}".format(out["ipam"], list(IPAM_KINDS)))
    if out["sriov_nad_owner"] not in ("sriovnetwork", "direct"):
        raise ClusterPlanError(
            "gpufabric_rails.sriov_nad_owner {!r} is not one of ['sriovnetwork', 'direct']".format(
                out["sriov_nad_owner"]
            )
        )
    for key in ("block_size", "rail_prefix", "rdma_hca_max"):
        if not isinstance(out[key], int) or isinstance(out[key], bool) or out[key] < 1:
            raise ClusterPlanError(f"gpufabric_rails.{key} must be a positive integer, got {out[key]!r}")
    return out


# --------------------------------------------------------------------------------------------- groups
def _group_nodes(
    nodes: Dict[str, Dict[str, Any]], label_prefix: str
) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[int, Dict[str, Any]]]]:
    """Group nodes by hardware signature; NICs and rails must look the same on every node of a group."""
    rails_of: Dict[str, Dict[int, Dict[str, Any]]] = {}
    by_sig: Dict[Tuple, Dict[str, Any]] = {}
    for node in sorted(nodes):
        facts = nodes[node] or {}
        rails = _node_rails(node, facts)
        rails_of[node] = rails
        gpus = facts.get("gpus") or []
        gpu_model = gpus[0].get("model") if gpus else "none"
        sig = (
            gpu_model,
            len(gpus),
            tuple(
                (
                    r,
                    rails[r]["model"],
                    rails[r]["vendor_id"],
                    rails[r]["device_id"],
                    rails[r]["netdev"],
                    rails[r]["rdma_device"],
                    rails[r]["port"],
                )
                for r in sorted(rails)
            ),
        )
        group = by_sig.get(sig)
        if group is None:
            nic_models = sorted({rails[r]["model"] for r in rails}) or ["none"]
            group = by_sig[sig] = {
                "base": dns_name("%s-%s-%dr" % (gpu_model, "-".join(nic_models), len(rails))),
                "gpu_model": gpu_model,
                "gpu_count": len(gpus),
                "nic_models": nic_models,
                "rail_indexes": sorted(rails),
                "nodes": [],
                "numa_nodes": len(facts.get("numa_nodes") or []),
                "rail_numa": [rails[r]["numa_node"] for r in sorted(rails)],
                "net_gdr_level": (facts.get("nccl") or {}).get("net_gdr_level"),
                "example": node,
            }
        group["nodes"].append(node)
    groups = sorted(by_sig.values(), key=lambda g: (g["base"], g["example"]))
    seen: Dict[str, int] = {}
    for group in groups:
        n = seen.get(group["base"], 0) + 1
        seen[group["base"]] = n
        group["name"] = group["base"] if n == 1 else "%s-%d" % (group["base"][:60], n)
        del group["base"]
        numa = group["rail_numa"]
        layout = ".".join("x" if v is None else str(v) for v in numa)
        group["labels"] = {
            label_prefix + "/node-group": group["name"],
            label_prefix + "/gpu-model": label_value(group["gpu_model"]),
            label_prefix + "/gpu-count": str(group["gpu_count"]),
            label_prefix + "/nic-model": label_value("_".join(group["nic_models"])),
            label_prefix + "/rails": str(len(group["rail_indexes"])),
            label_prefix + "/numa-nodes": str(group["numa_nodes"]),
        }
        if layout and len(layout) <= 63:
            group["labels"][label_prefix + "/rail-numa"] = layout
    return groups, rails_of


# --------------------------------------------------------------------------------------------- rails
def _rail_specs(cfg: Dict[str, Any], groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if cfg["rails"] is None:
        indexes = sorted({r for g in groups for r in g["rail_indexes"]})
        specs = [{"rail": r} for r in indexes]
    else:
        specs = []
        for pos, item in enumerate(cfg["rails"]):
            if not isinstance(item, dict):
                raise ClusterPlanError("gpufabric_rails.rails[%d] must be a dict, got %r" % (pos, item))
            unknown = sorted(set(item) - set(RAIL_KEYS))
            if unknown:
                raise ClusterPlanError(
                    "gpufabric_rails.rails[%d]: unknown keys %s; allowed: %s" % (pos, unknown, list(RAIL_KEYS))
                )
            spec = dict(item)
            spec.setdefault("rail", pos)
            specs.append(spec)
    if not specs:
        raise ClusterPlanError("no rails: gpufabric_rails.rails is empty and no node reports a compute NIC with a rail")
    names = set()
    for spec in specs:
        spec["name"] = str(spec.get("name") or "%s%d" % (cfg["name_prefix"], int(spec["rail"])))
        if not _DNS_LABEL.match(spec["name"]):
            raise ClusterPlanError(
                "rail {}: name must be a DNS label (lower-case alphanumerics and '-')".format(spec["name"])
            )
        if spec["name"] in names:
            raise ClusterPlanError("rail {}: name used twice".format(spec["name"]))
        names.add(spec["name"])
        spec["nad_type"] = spec.get("nad_type") or cfg["nad_type"]
        if spec["nad_type"] not in NAD_TYPES:
            raise ClusterPlanError(
                "rail {}: nad_type {!r} is not one of {}".format(spec["name"], spec["nad_type"], list(NAD_TYPES))
            )
        spec["block_size"] = int(spec.get("block_size") or cfg["block_size"])
    return specs


def _address_plan(cfg: Dict[str, Any], specs: List[Dict[str, Any]], cluster_cidrs: Dict[str, Any]) -> None:
    reserved: List[Tuple[str, Any]] = []
    for key in sorted(cluster_cidrs or {}):
        values = cluster_cidrs[key]
        for value in values if isinstance(values, list) else [values]:
            if value:
                reserved.append((f"cluster {key} {value}", network(value, f"gpufabric_cluster_cidrs.{key}")))
    explicit = [s for s in specs if s.get("subnet")]
    for spec in explicit:
        spec["_net"] = network(spec["subnet"], "rail {} subnet".format(spec["name"]))
    missing = [s for s in specs if not s.get("subnet")]
    if missing:
        if not cfg["supernet"]:
            raise ClusterPlanError(
                "rails {} have no subnet and gpufabric_rails.supernet is not set".format(
                    _short_list([s["name"] for s in missing])
                )
            )
        supernet = network(cfg["supernet"], "gpufabric_rails.supernet")
        avoid = [net for _name, net in reserved] + [s["_net"] for s in explicit]
        for spec, net in zip(
            missing, carve(supernet, int(cfg["rail_prefix"]), len(missing), avoid, "gpufabric_rails.supernet")
        ):
            spec["_net"] = net
    named = [("rail {} {}".format(s["name"], s["_net"]), s["_net"]) for s in specs] + reserved
    clashes = find_overlaps(named)
    if clashes:
        a, _net_a, b, _net_b = clashes[0]
        more = "" if len(clashes) == 1 else " (and %d more overlapping pairs)" % (len(clashes) - 1)
        raise ClusterPlanError(f"overlapping subnets: {a} overlaps {b}{more}")
    for spec in specs:
        gw = spec.get("gateway")
        if gw is False or gw == "":
            spec["_gw"] = None
        elif gw is None:
            spec["_gw"] = default_gateway(spec["_net"])
        else:
            spec["_gw"] = address(gw, "rail {} gateway".format(spec["name"]))
        if spec["_gw"] is not None:
            check_gateway(spec["name"], spec["_net"], spec["_gw"])
        vlan = spec.get("vlan")
        if vlan is not None and (not isinstance(vlan, int) or isinstance(vlan, bool) or not 1 <= vlan <= 4094):
            raise ClusterPlanError("rail {}: vlan {!r} is not an integer 1-4094".format(spec["name"], vlan))
        if vlan is not None and spec["nad_type"] == "host-device":
            raise ClusterPlanError(
                "rail %s: vlan %d cannot be set on a host-device rail (the whole netdev moves into the Pod)"
                % (spec["name"], vlan)
            )


def _match_rails(
    specs: List[Dict[str, Any]],
    groups: List[Dict[str, Any]],
    rails_of: Dict[str, Dict[int, Dict[str, Any]]],
    fabric: Dict[str, Any],
) -> None:
    group_names = [g["name"] for g in groups]
    for spec in specs:
        wanted = spec.get("node_groups")
        if wanted:
            unknown = sorted(set(wanted) - set(group_names))
            if unknown:
                raise ClusterPlanError(
                    "rail {}: node_groups {} do not exist; discovered groups: {}".format(
                        spec["name"], unknown, group_names
                    )
                )
            spec["_groups"] = [g for g in groups if g["name"] in wanted]
        else:
            spec["_groups"] = list(groups)
        rail = int(spec["rail"])
        lacking = [n for g in spec["_groups"] for n in g["nodes"] if rail not in rails_of[n]]
        if lacking:
            total = sum(len(g["nodes"]) for g in spec["_groups"])
            raise ClusterPlanError(
                "rail %s (index %d): no matching NIC on %d of %d nodes: %s (limit the rail with node_groups)"
                % (spec["name"], rail, len(lacking), total, _short_list(lacking))
            )
        mtus: Dict[Any, List[str]] = {}
        for g in spec["_groups"]:
            for n in g["nodes"]:
                mtus.setdefault(rails_of[n][rail]["mtu"], []).append(n)
        reported = {k: v for k, v in mtus.items() if k is not None}
        if spec.get("mtu") is not None:
            wrong = {k: v for k, v in reported.items() if int(k) != int(spec["mtu"])}
            if wrong:
                parts = ["%s on %d nodes (%s)" % (k, len(v), _short_list(v)) for k, v in sorted(wrong.items())]
                raise ClusterPlanError(
                    "rail {}: MTU differs within the rail: intent {}, NICs report {}".format(
                        spec["name"], spec["mtu"], "; ".join(parts)
                    )
                )
            spec["_mtu"] = int(spec["mtu"])
        elif len(reported) > 1:
            parts = ["%s on %d nodes (%s)" % (k, len(v), _short_list(v)) for k, v in sorted(reported.items())]
            raise ClusterPlanError("rail {}: MTU differs within the rail: {}".format(spec["name"], "; ".join(parts)))
        elif reported:
            spec["_mtu"] = int(next(iter(reported)))
        else:
            spec["_mtu"] = int(fabric.get("mtu") or 9000)
        spec["_nodes"] = sum(len(g["nodes"]) for g in spec["_groups"])


def _check_netns(specs: List[Dict[str, Any]], groups: List[Dict[str, Any]], fabric: Dict[str, Any]) -> None:
    mode = fabric.get("rdma_netns_mode") or "shared"
    for group in groups:
        on = [s for s in specs if any(g is group for g in s["_groups"])]
        shared = [s["name"] for s in on if s["nad_type"] in SHARED_TYPES]
        exclusive = [s["name"] for s in on if s["nad_type"] == "sriov"]
        if shared and exclusive:
            raise ClusterPlanError(
                "node group {}: mixes shared RDMA netns rails ({}) and exclusive SR-IOV rails ({}); "
                "one node pool uses one mode".format(group["name"], ", ".join(shared), ", ".join(exclusive))
            )
        if exclusive and mode != "exclusive":
            raise ClusterPlanError(
                "node group {}: SR-IOV rails {} need gpufabric_fabric.rdma_netns_mode exclusive, it is {}".format(
                    group["name"], ", ".join(exclusive), mode
                )
            )
        if shared and mode != "shared":
            raise ClusterPlanError(
                "node group {}: rails {} use the RDMA shared device plugin, which needs "
                "gpufabric_fabric.rdma_netns_mode shared, it is {}".format(group["name"], ", ".join(shared), mode)
            )


# --------------------------------------------------------------------------------------------- objects
def _meta(name: str, namespace: Optional[str] = None, labels: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict({"app.kubernetes.io/managed-by": "gpufabric.rollout"}, **(labels or {}))
    return meta


def _image(components: Dict[str, Any], key: str) -> Dict[str, Any]:
    spec = dict(DEFAULT_COMPONENTS[key])
    spec.update(components.get(key) or {})
    spec.setdefault("repository", components.get("repository") or DEFAULT_COMPONENTS["repository"])
    return {k: spec[k] for k in ("image", "repository", "version") if spec.get(k)}


def _ipam(cfg: Dict[str, Any], spec: Dict[str, Any]) -> Dict[str, Any]:
    if cfg["ipam"] == "nv-ipam-ippool":
        return {"type": "nv-ipam", "poolName": spec["_pool"]}
    if cfg["ipam"] == "nv-ipam-cidrpool":
        return {"type": "nv-ipam", "poolName": spec["_pool"], "poolType": "cidrpool"}
    ipam: Dict[str, Any] = {"type": "whereabouts", "range": str(spec["_net"])}
    if spec["_gw"] is not None:
        ipam["gateway"] = str(spec["_gw"])
        ipam["exclude"] = ["%s/%d" % (spec["_gw"], width(spec["_net"]))]
    return ipam


def _pool(cfg: Dict[str, Any], spec: Dict[str, Any], group_label: str) -> Optional[Dict[str, Any]]:
    if cfg["ipam"] == "whereabouts":
        return None
    selector = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": group_label, "operator": "In", "values": [g["name"] for g in spec["_groups"]]}
                ]
            }
        ]
    }
    meta = _meta(spec["_pool"], cfg["pool_namespace"], {cfg["label_prefix"] + "/rail": spec["name"]})
    if cfg["ipam"] == "nv-ipam-ippool":
        body: Dict[str, Any] = {"subnet": str(spec["_net"]), "perNodeBlockSize": spec["block_size"]}
        if spec["_gw"] is not None:
            body["gateway"] = str(spec["_gw"])
        body["nodeSelector"] = selector
        return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "metadata": meta, "spec": body}
    body = {"cidr": str(spec["_net"]), "perNodeNetworkPrefix": spec["_prefix"]}
    if spec["_gw"] is not None:
        # CIDRPool gateways are per node block: the same offset inside every block as the rail gateway in the subnet.
        body["gatewayIndex"] = (int(spec["_gw"]) - spec["_net"].first) % (2 ** (width(spec["_net"]) - spec["_prefix"]))
    body["nodeSelector"] = selector
    return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "CIDRPool", "metadata": meta, "spec": body}


def _nad(cfg: Dict[str, Any], spec: Dict[str, Any], name: str, netdev: Optional[str]) -> Dict[str, Any]:
    ipam = _ipam(cfg, spec)
    vlan = spec.get("vlan")
    kind = spec["nad_type"]
    if kind == "sriov":
        sriov: Dict[str, Any] = {"type": "sriov"}
        if vlan is not None:
            sriov["vlan"] = vlan
        sriov["ipam"] = ipam
        config: Dict[str, Any] = {"cniVersion": cfg["cni_version"], "name": name, "plugins": [sriov, {"type": "rdma"}]}
    else:
        config = {"cniVersion": cfg["cni_version"], "name": name, "type": kind}
        if kind == "host-device":
            config["device"] = netdev
        else:
            config["master"] = netdev if vlan is None else "%s.%d" % (netdev, vlan)
            config["mode"] = cfg["macvlan_mode"] if kind == "macvlan" else cfg["ipvlan_mode"]
            config["mtu"] = spec["_mtu"]
        config["ipam"] = ipam
    meta = _meta(name, cfg["nad_namespace"], {cfg["label_prefix"] + "/rail": spec["name"]})
    meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": spec["_resource"]}
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": meta,
        "spec": {"config": json.dumps(config, sort_keys=True, separators=(",", ":"))},
    }


def _device_plugin_config(
    cfg: Dict[str, Any],
    specs: List[Dict[str, Any]],
    groups: List[Dict[str, Any]],
    rails_of: Dict[str, Dict[int, Dict[str, Any]]],
) -> str:
    entries = []
    for spec in specs:
        if spec["nad_type"] not in SHARED_TYPES:
            continue
        mine = [g for g in spec["_groups"] if any(g is x for x in groups)]
        if not mine:
            continue
        nics = [rails_of[g["example"]][int(spec["rail"])] for g in mine]
        entries.append(
            {
                "resourcePrefix": cfg["resource_prefix"],
                "resourceName": spec["name"],
                "rdmaHcaMax": cfg["rdma_hca_max"],
                "selectors": {
                    "vendors": sorted({n["vendor_id"] for n in nics}),
                    "deviceIDs": sorted({n["device_id"] for n in nics}),
                    "drivers": sorted({n["driver"] for n in nics}),
                    "ifNames": sorted({n["netdev"] for n in nics}),
                    "linkTypes": ["ether"],
                },
            }
        )
    return json.dumps({"periodicUpdateInterval": 300, "configList": entries}, sort_keys=True, separators=(",", ":"))


def gid_index_script() -> str:
    """POSIX sh for a Pod's init step (NCCL < 2.21): the RoCE v2 IPv4 GID index of the Pod's own rail interface.

    Reads /sys/class/infiniband/DEV/ports/P/gids/N with gid_attrs/types/N and gid_attrs/ndevs/N (facts.md 2.2)
    and writes `NCCL_IB_GID_INDEX=N` to the file named by $2 (default /etc/nccl-gid/env).
    """
    return "\n".join(
        [
            "#!/bin/sh",
            "# usage: find-gid-index.sh [IFNAME] [OUTFILE]  (managed by gpufabric.rollout)",
            "# Prints the RoCE v2 GID index whose netdev is IFNAME and whose GID is IPv4-mapped.",
            "set -eu",
            'ifname="${1:-net1}"',
            'out="${2:-/etc/nccl-gid/env}"',
            'sysfs="${GPUFABRIC_SYSFS:-/sys}"',
            'for gid in "$sysfs"/class/infiniband/*/ports/*/gids/*; do',
            '  [ -r "$gid" ] || continue',
            '  idx="${gid##*/}"',
            '  port="${gid%/gids/*}"',
            '  ndev=$(cat "$port/gid_attrs/ndevs/$idx" 2>/dev/null || true)',
            '  type=$(cat "$port/gid_attrs/types/$idx" 2>/dev/null || true)',
            '  value=$(cat "$gid" 2>/dev/null || true)',
            '  [ "$ndev" = "$ifname" ] || continue',
            '  case "$type" in "RoCE v2"|"RoCE V2") ;; *) continue ;; esac',
            '  case "$value" in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac',
            '  mkdir -p "$(dirname "$out")"',
            '  echo "NCCL_IB_GID_INDEX=$idx" > "$out"',
            '  echo "$idx"',
            "  exit 0",
            "done",
            'echo "no RoCE v2 IPv4 GID on $ifname" >&2',
            "exit 1",
            "",
        ]
    )


def _nccl_env(
    cfg: Dict[str, Any],
    group: Dict[str, Any],
    specs: List[Dict[str, Any]],
    rails_of: Dict[str, Dict[int, Dict[str, Any]]],
    fabric: Dict[str, Any],
    nccl_version: Any,
) -> Dict[str, str]:
    nics = rails_of[group["example"]]
    on = [s for s in specs if any(g is group for g in s["_groups"])]
    hcas = [
        "%s:%d" % (nics[int(s["rail"])]["rdma_device"], nics[int(s["rail"])]["port"])
        for s in sorted(on, key=lambda s: int(s["rail"]))
    ]
    env = {
        "NCCL_IB_HCA": "=" + ",".join(hcas),
        "NCCL_IB_TC": str(fabric.get("roce_tos", 106)),
        "NCCL_SOCKET_IFNAME": str(cfg["socket_ifname"]),
    }
    if group.get("net_gdr_level"):
        env["NCCL_NET_GDR_LEVEL"] = str(group["net_gdr_level"])
    if version_tuple(nccl_version) < (2, 21):
        env["GPUFABRIC_NCCL_GID_SCRIPT"] = "/opt/gpufabric/find-gid-index.sh"
    return env


def _sriov_objects(
    cfg: Dict[str, Any], specs: List[Dict[str, Any]], rails_of: Dict[str, Dict[int, Dict[str, Any]]]
) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    label = cfg["label_prefix"] + "/node-group"
    sriov_groups: Dict[str, Dict[str, Any]] = {}
    for spec in specs:
        if spec["nad_type"] != "sriov":
            continue
        for group in spec["_groups"]:
            sriov_groups[group["name"]] = group
            nic = rails_of[group["example"]][int(spec["rail"])]
            policy = {
                "resourceName": spec["name"],
                "nodeSelector": {label: group["name"]},
                "numVfs": int(cfg["sriov_num_vfs"]),
                "nicSelector": {"vendor": nic["vendor_id"], "deviceID": nic["device_id"], "pfNames": [nic["netdev"]]},
                "deviceType": "netdevice",
                "isRdma": True,
                "linkType": "eth",
                "mtu": spec["_mtu"],
            }
            out.append(
                {
                    "apiVersion": "sriovnetwork.openshift.io/v1",
                    "kind": "SriovNetworkNodePolicy",
                    "metadata": _meta(
                        dns_name("{}-{}".format(spec["name"], group["name"])),
                        cfg["pool_namespace"],
                        {cfg["label_prefix"] + "/rail": spec["name"]},
                    ),
                    "spec": policy,
                }
            )
        if cfg["sriov_nad_owner"] == "sriovnetwork":
            body: Dict[str, Any] = {
                "resourceName": spec["name"],
                "networkNamespace": cfg["nad_namespace"],
                "ipam": json.dumps(_ipam(cfg, spec), sort_keys=True, separators=(",", ":")),
                "metaPlugins": json.dumps({"type": "rdma"}),
            }
            if spec.get("vlan") is not None:
                body["vlan"] = spec["vlan"]
            out.append(
                {
                    "apiVersion": "sriovnetwork.openshift.io/v1",
                    "kind": "SriovNetwork",
                    "metadata": _meta(
                        spec["name"], cfg["pool_namespace"], {cfg["label_prefix"] + "/rail": spec["name"]}
                    ),
                    "spec": body,
                }
            )
    if sriov_groups:
        out.append(
            {
                "apiVersion": "sriovnetwork.openshift.io/v1",
                "kind": "SriovNetworkPoolConfig",
                "metadata": _meta("gpufabric-rdma-exclusive", cfg["pool_namespace"]),
                "spec": {
                    "rdmaMode": "exclusive",
                    "nodeSelector": {
                        "matchExpressions": [{"key": label, "operator": "In", "values": sorted(sriov_groups)}]
                    },
                },
            }
        )
    return out


# --------------------------------------------------------------------------------------------- main
def plan_cluster(
    intent: Optional[Dict[str, Any]],
    nodes: Dict[str, Dict[str, Any]],
    cluster_cidrs: Optional[Dict[str, Any]] = None,
    fabric: Optional[Dict[str, Any]] = None,
    nccl_version: Any = None,
    components: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Plan the cluster side; see the module docstring. `nodes` maps node name -> gpufabric_topology facts."""
    try:
        require_netaddr()
    except IPPlanError as exc:
        raise ClusterPlanError(str(exc)) from None
    cfg = normalize_intent(intent)
    fabric = dict(fabric or {})
    components = dict(components or {})
    if not nodes:
        raise ClusterPlanError("no GPU nodes: the plan needs the topology facts of at least one node")
    groups, rails_of = _group_nodes(nodes, cfg["label_prefix"])
    specs = _rail_specs(cfg, groups)
    try:
        _address_plan(cfg, specs, cluster_cidrs or {})
    except IPPlanError as exc:
        raise ClusterPlanError(str(exc)) from None
    _match_rails(specs, groups, rails_of, fabric)
    _check_netns(specs, groups, fabric)

    group_label = cfg["label_prefix"] + "/node-group"
    rails_out: List[Dict[str, Any]] = []
    pools: List[Dict[str, Any]] = []
    nads: List[Dict[str, Any]] = []
    for spec in specs:
        rail = int(spec["rail"])
        spec["_pool"] = spec["name"]
        prefix = cfg["sriov_resource_prefix"] if spec["nad_type"] == "sriov" else cfg["resource_prefix"]
        spec["_resource"] = "{}/{}".format(prefix, spec["name"])
        try:
            if cfg["ipam"] == "nv-ipam-cidrpool":
                spec["_prefix"] = int(cfg["per_node_prefix"] or prefix_for_block(spec["_net"], spec["block_size"]))
                capacity = check_prefix_capacity(spec["name"], spec["_net"], spec["_prefix"], spec["_nodes"])
            else:
                capacity = check_ip_capacity(
                    spec["name"], spec["_net"], spec["_gw"], spec["_nodes"], spec["block_size"]
                )
        except IPPlanError as exc:
            raise ClusterPlanError(str(exc)) from None
        pool = _pool(cfg, spec, group_label)
        if pool is not None:
            pools.append(pool)
        # One NAD per rail when the parent netdev has one name everywhere, else one per node group.
        by_dev: Dict[Any, List[Dict[str, Any]]] = {}
        for g in spec["_groups"]:
            by_dev.setdefault(rails_of[g["example"]][rail]["netdev"], []).append(g)
        nad_names = []
        nad_by_group: Dict[str, str] = {}  # the NAD a Pod of each node group attaches for this rail
        if spec["nad_type"] == "sriov" and cfg["sriov_nad_owner"] == "sriovnetwork":
            nad_names = [spec["name"]]  # generated by the SR-IOV operator from the SriovNetwork
        elif spec["nad_type"] == "sriov" or len(by_dev) == 1:
            nad = _nad(cfg, spec, spec["name"], next(iter(by_dev)))
            nads.append(nad)
            nad_names.append(spec["name"])
        else:
            for dev, gs in sorted(by_dev.items(), key=lambda kv: kv[1][0]["name"]):
                for g in gs:
                    name = dns_name("{}-{}".format(spec["name"], g["name"]))
                    nads.append(_nad(cfg, spec, name, dev))
                    nad_names.append(name)
                    nad_by_group[g["name"]] = name
        for g in spec["_groups"]:
            nad_by_group.setdefault(g["name"], spec["name"])
        rails_out.append(
            {
                "rail": rail,
                "name": spec["name"],
                "nad_type": spec["nad_type"],
                "subnet": str(spec["_net"]),
                "gateway": None if spec["_gw"] is None else str(spec["_gw"]),
                "vlan": spec.get("vlan"),
                "mtu": spec["_mtu"],
                "resource": spec["_resource"],
                "ipam": cfg["ipam"],
                "pool": None if pool is None else spec["_pool"],
                "block_size": spec["block_size"],
                "per_node_prefix": spec.get("_prefix"),
                "nads": nad_names,
                "nad_by_group": nad_by_group,
                "node_groups": [g["name"] for g in spec["_groups"]],
                "nodes": spec["_nodes"],
                "capacity": capacity,
                "ifnames": sorted({d for d in by_dev if d}),
                "vendors": sorted({rails_of[g["example"]][rail]["vendor_id"] for g in spec["_groups"]}),
                "device_ids": sorted({rails_of[g["example"]][rail]["device_id"] for g in spec["_groups"]}),
            }
        )

    shared_specs = [s for s in specs if s["nad_type"] in SHARED_TYPES]
    policies: List[Dict[str, Any]] = []
    ncp_spec: Dict[str, Any] = {
        "secondaryNetwork": {"multus": _image(components, "multus"), "cniPlugins": _image(components, "cni_plugins")},
    }
    if cfg["ipam"] != "whereabouts":
        ncp_spec["nvIpam"] = dict(_image(components, "nv_ipam"), enableWebhook=False)
    if shared_specs and len(groups) == 1:
        ncp_spec["rdmaSharedDevicePlugin"] = dict(
            _image(components, "rdma_shared_device_plugin"), config=_device_plugin_config(cfg, specs, groups, rails_of)
        )
    policies.append(
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "metadata": _meta("nic-cluster-policy"),
            "spec": ncp_spec,
        }
    )
    if shared_specs and len(groups) > 1:
        for group in groups:
            if not any(any(g is group for g in s["_groups"]) for s in shared_specs):
                continue
            policies.append(
                {
                    "apiVersion": "mellanox.com/v1alpha1",
                    "kind": "NicNodePolicy",
                    "metadata": _meta(dns_name("gpufabric-" + group["name"])),
                    "spec": {
                        "nodeSelector": {group_label: group["name"]},
                        "rdmaSharedDevicePlugin": dict(
                            _image(components, "rdma_shared_device_plugin"),
                            config=_device_plugin_config(cfg, specs, [group], rails_of),
                        ),
                    },
                }
            )

    configmaps: List[Dict[str, Any]] = []
    nccl: Dict[str, Dict[str, str]] = {}
    for group in groups:
        if not any(any(g is group for g in s["_groups"]) for s in specs):
            continue
        env = _nccl_env(cfg, group, specs, rails_of, fabric, nccl_version)
        nccl[group["name"]] = env
        group["nccl_configmap"] = dns_name("nccl-env-" + group["name"])
        configmaps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta(group["nccl_configmap"], cfg["nad_namespace"], {group_label: group["name"]}),
                "data": env,
            }
        )
    if version_tuple(nccl_version) < (2, 21):
        configmaps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta("nccl-gid-index", cfg["nad_namespace"]),
                "data": {"find-gid-index.sh": gid_index_script()},
            }
        )

    node_labels: Dict[str, Dict[str, str]] = {}
    for group in groups:
        for node in group["nodes"]:
            node_labels[node] = group["labels"]

    objects = {
        "network_operator": policies,
        "rdma_networks": pools + nads + configmaps,
        "sriov_networks": _sriov_objects(cfg, specs, rails_of),
    }
    return {
        "config": {k: v for k, v in cfg.items() if k != "rails"},
        "crds": {
            part: sorted({CRD_NAMES[o["kind"]] for o in objs if o["kind"] in CRD_NAMES})
            for part, objs in objects.items()
        },
        "namespaces": sorted(
            {o["metadata"]["namespace"] for objs in objects.values() for o in objs if o["metadata"].get("namespace")}
        ),
        "node_groups": [{k: v for k, v in g.items() if k != "example"} for g in groups],
        "rails": rails_out,
        "node_labels": node_labels,
        "nccl": nccl,
        "objects": objects,
    }


def render_files(objects: List[Dict[str, Any]], prefix: str = "") -> List[Dict[str, Any]]:
    """One file per object, named <prefix><kind>-<namespace>-<name>.yaml (lower case); duplicates are an error."""
    out: List[Dict[str, Any]] = []
    seen: Dict[str, Dict[str, Any]] = {}
    for obj in objects or []:
        meta = obj.get("metadata") or {}
        parts = [obj.get("kind", "object"), meta.get("namespace") or "", meta.get("name", "")]
        name = prefix + "-".join(dns_name(p) for p in parts if p) + ".yaml"
        if name in seen:
            raise ClusterPlanError("two objects render to {}: {}/{}".format(name, obj.get("kind"), meta.get("name")))
        seen[name] = obj
        out.append({"file": name, "object": obj})
    return out


def report_text(plan: Dict[str, Any]) -> str:
    """Human-readable section for gpufabric_report_sections['cluster']."""
    lines = ["node groups:"]
    for g in plan["node_groups"]:
        lines.append(
            "  %-32s %3d nodes  GPU %s x%s  NIC %s  rails %d"
            % (
                g["name"],
                len(g["nodes"]),
                g["gpu_model"],
                g["gpu_count"],
                "/".join(g["nic_models"]),
                len(g["rail_indexes"]),
            )
        )
    lines.append("rails:")
    lines.append(
        "  %-8s %-18s %-15s %-24s %-10s %-34s %s"
        % ("rail", "subnet", "gateway", "resource", "pool", "NADs", "capacity")
    )
    for r in plan["rails"]:
        cap = r["capacity"]
        lines.append(
            "  %-8s %-18s %-15s %-24s %-10s %-34s %d/%d used by %d nodes, mtu %d%s"
            % (
                r["name"],
                r["subnet"],
                r["gateway"] or "-",
                r["resource"],
                r["pool"] or "(whereabouts)",
                ",".join(r["nads"]),
                cap["needed"],
                cap["usable"],
                r["nodes"],
                r["mtu"],
                "" if r["vlan"] is None else ", vlan %d" % r["vlan"],
            )
        )
    return "\n".join(lines) + "\n"
