# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes objects of the cluster plan: NicClusterPolicy / NicNodePolicy with the RDMA shared
device plugin config, nv-ipam pools, NetworkAttachmentDefinitions, SR-IOV operator objects, NCCL
environment, and one file name per object for render mode. Moved unchanged from _cluster_plan.py.

Object shapes follow docs/facts.md, "Network Operator and secondary-network objects". Pure and typed, no AnsibleModule.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import (
    SHARED_TYPES,
    ClusterPlanError,
    dns_name,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.ipplan import width

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
    "rdma_shared_device_plugin": {"image": "k8s-rdma-shared-dev-plugin", "version": "network-operator-v26.4.1"},
    "multus": {"image": "multus-cni", "version": "network-operator-v26.4.1"},
    "cni_plugins": {"image": "plugins", "version": "network-operator-v26.4.1"},
    "nv_ipam": {"image": "nvidia-k8s-ipam", "version": "network-operator-v26.4.1"},
}


# --------------------------------------------------------------------------------------------- objects
def object_meta(name: str, namespace: Optional[str] = None, labels: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict({"app.kubernetes.io/managed-by": "gpufabric.rollout"}, **(labels or {}))
    return meta


def image_spec(components: Dict[str, Any], key: str) -> Dict[str, Any]:
    spec = dict(DEFAULT_COMPONENTS[key])
    spec.update(components.get(key) or {})
    spec.setdefault("repository", components.get("repository") or DEFAULT_COMPONENTS["repository"])
    return {k: spec[k] for k in ("image", "repository", "version") if spec.get(k)}


def release_images(
    components: Dict[str, Any], version: Any, accepts: Dict[str, bool], nv_ipam: bool
) -> Dict[str, Dict[str, Any]]:
    """The ImageSpec of every component the NicClusterPolicy / NicNodePolicies carry. Releases before
    26.4.0 require image, repository and version in each; a component without one is refused."""
    keys = ["rdma_shared_device_plugin", "multus", "cni_plugins"] + (["nv_ipam"] if nv_ipam else [])
    out = {key: image_spec(components, key) for key in keys}
    if accepts["image_spec_needs_all"]:
        for key in keys:
            missing = [k for k in ("image", "repository", "version") if not out[key].get(k)]
            if missing:
                raise ClusterPlanError(
                    "network_operator_images.%s: %s is empty, but the Network Operator %s (network_operator_"
                    "chart_version) requires image, repository and version in every component; set them, or "
                    "pin 26.4.0 or later" % (key, ", ".join(missing), version)
                )
    return out


def node_policy_refusal(version: Any, shared_specs: List[Dict[str, Any]], groups: List[Dict[str, Any]]) -> str:
    """Why node groups with their own RDMA shared device plugin selectors need a NicNodePolicy release."""
    names = sorted({g["name"] for s in shared_specs for g in s["_groups"] if any(g is x for x in groups)})
    return (
        "network_operator_chart_version: %s has no NicNodePolicy (the Network Operator added it in 26.4.0), "
        "but the node groups %s (different NIC hardware) need their own RDMA shared device plugin selectors, "
        "which one NicClusterPolicy cannot give them; pin 26.4.0 or later" % (version, ", ".join(names))
    )


def ipam_config(cfg: Dict[str, Any], spec: Dict[str, Any]) -> Dict[str, Any]:
    if cfg["ipam"] == "nv-ipam-ippool":
        return {"type": "nv-ipam", "poolName": spec["_pool"]}
    if cfg["ipam"] == "nv-ipam-cidrpool":
        return {"type": "nv-ipam", "poolName": spec["_pool"], "poolType": "cidrpool"}
    ipam: Dict[str, Any] = {"type": "whereabouts", "range": str(spec["_net"])}
    if spec["_gw"] is not None:
        ipam["gateway"] = str(spec["_gw"])
        ipam["exclude"] = ["%s/%d" % (spec["_gw"], width(spec["_net"]))]
    return ipam


def pool_object(cfg: Dict[str, Any], spec: Dict[str, Any], group_label: str) -> Optional[Dict[str, Any]]:
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
    meta = object_meta(spec["_pool"], cfg["pool_namespace"], {cfg["label_prefix"] + "/rail": spec["name"]})
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


def nad_object(cfg: Dict[str, Any], spec: Dict[str, Any], name: str, netdev: Optional[str]) -> Dict[str, Any]:
    ipam = ipam_config(cfg, spec)
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
    meta = object_meta(name, cfg["nad_namespace"], {cfg["label_prefix"] + "/rail": spec["name"]})
    meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": spec["_resource"]}
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": meta,
        "spec": {"config": json.dumps(config, sort_keys=True, separators=(",", ":"))},
    }


def device_plugin_config(
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


def nccl_env(
    cfg: Dict[str, Any],
    group: Dict[str, Any],
    specs: List[Dict[str, Any]],
    rails_of: Dict[str, Dict[int, Dict[str, Any]]],
    fabric: Dict[str, Any],
    nccl_version: Any,
) -> Dict[str, str]:
    """The Pods' NCCL environment of one node group: plan.nccl.environment of the group's rails."""
    nics = rails_of[group["example"]]
    on = sorted((s for s in specs if any(g is group for g in s["_groups"])), key=lambda s: int(s["rail"]))
    ports = [(nics[int(s["rail"])]["rdma_device"], int(nics[int(s["rail"])]["port"])) for s in on]
    try:
        env = _nccl.environment(
            ports,
            str(cfg["socket_ifname"]),
            fabric,
            nccl_version,
            group.get("net_gdr_level"),
            gid_script=_nccl.POD_GID_SCRIPT,
        )
    except _nccl.NcclPlanError as exc:
        raise ClusterPlanError("node group %s: %s" % (group["name"], exc)) from None
    return dict(env)


def sriov_objects(
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
                    "metadata": object_meta(
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
                "ipam": json.dumps(ipam_config(cfg, spec), sort_keys=True, separators=(",", ":")),
                "metaPlugins": json.dumps({"type": "rdma"}),
            }
            if spec.get("vlan") is not None:
                body["vlan"] = spec["vlan"]
            out.append(
                {
                    "apiVersion": "sriovnetwork.openshift.io/v1",
                    "kind": "SriovNetwork",
                    "metadata": object_meta(
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
                "metadata": object_meta("gpufabric-rdma-exclusive", cfg["pool_namespace"]),
                "spec": {
                    "rdmaMode": "exclusive",
                    "nodeSelector": {
                        "matchExpressions": [{"key": label, "operator": "In", "values": sorted(sriov_groups)}]
                    },
                },
            }
        )
    return out


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
