# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dynamic Resource Allocation (``gpufabric_k8s_device_allocation: dra``): the DeviceClasses and,
per node group, the ResourceClaimTemplates that give a Pod each GPU together with a rail NIC on
the same PCIe root, planned from the discovered topology.

A *set* is one rail of a node group: the GPU(s) discovery assigned to that rail and the rail NIC,
which must share a PCIe root (the host bridge, ``pci<domain>:<bus>``). A claim template asks for
N sets: per set one GPU request and one NIC request, tied by ``matchAttribute`` on the standard
attribute ``resource.kubernetes.io/pcieRoot``, the one attribute both drivers publish under the
same name (docs/facts.md, "DRA drivers: names and device attributes"). Templates: a full node
(every rail) and 1, 2 and 4 sets where the group has that many.

- NUMA: the GPU driver publishes no NUMA attribute for a full GPU, so NUMA cannot tie a GPU to a
  NIC; a PCIe root never spans NUMA nodes, so the root already implies it. Where the sets of a
  template could come from different NUMA nodes (several roots, several NUMA nodes), the NIC
  requests of a 2- or 4-set template also match ``dra.net/numaNode``, so the whole claim stays on
  one socket (planned only where one NUMA node holds that many sets).
- A root shared by several sets (HGX boards: two GPU+NIC switches below one root) aligns each GPU
  to a NIC of its root, not necessarily the NIC of its own switch: no attribute both drivers
  publish tells the switches apart. The pairs report says so for each such root.
- A GPU whose rail NIC is on another root cannot be aligned at all: refused, naming the GPU, the
  NIC and both roots.

Binding to a node group: a template's name carries the group, and its NIC requests select the
group's rail interfaces by name (``dra.net/ifName``, the same on every node of a group: they are
part of the group's hardware signature), so a claim never takes a storage NIC or another
hardware's rail NIC. The drivers publish no node-group attribute, so a selector on one is not
possible; the Pod's ``nodeSelector`` on the node-group label (which the plan puts on each Node)
places it on the group.

Pure and typed, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import dns_name
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import CRD_NAMES

VARIABLE = "gpufabric_k8s_device_allocation"
MODES = ("device_plugin", "dra")
API_VERSION = "resource.k8s.io/v1"
# docs/facts.md, "DRA drivers: names and device attributes".
GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVER = "dra.net"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NIC_NUMA = NIC_DRIVER + "/numaNode"
GPU_CLASS = "gpufabric-gpu"
NIC_CLASS = "gpufabric-rail-nic"
SET_COUNTS = (1, 2, 4)


class DraPlanError(ValueError):
    """The discovered topology cannot give aligned GPU and NIC sets."""


def device_classes() -> List[Dict[str, Any]]:
    """The two DeviceClasses: whole GPUs of the GPU driver, RDMA NICs of the NIC driver."""
    gpu = f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].type == "gpu"'
    nic = f'device.driver == "{NIC_DRIVER}" && device.attributes["{NIC_DRIVER}"].rdma == true'
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        for name, expression in ((GPU_CLASS, gpu), (NIC_CLASS, nic))
    ]


# --------------------------------------------------------------------------------------------- sets
def node_sets(topology: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One set per rail of a node: its GPUs and NIC, with their PCIe roots and NUMA nodes."""
    gpus = {g.get("name") or f"GPU{g.get('index')}": g for g in topology.get("gpus") or []}
    nics = {n.get("rdma_device"): n for n in topology.get("nics") or []}
    by_rail: Dict[int, Dict[str, Any]] = {}
    for entry in topology.get("rails") or []:
        gpu = gpus.get(entry.get("gpu")) or {}
        nic = nics.get(entry.get("nic")) or {}
        item = by_rail.setdefault(
            int(entry["rail"]),
            {
                "rail": int(entry["rail"]),
                "nic": entry.get("nic"),
                "netdev": entry.get("netdev"),
                "roce_netdev": entry.get("roce_netdev") or entry.get("netdev"),
                "roce_vlan": entry.get("roce_vlan"),
                "nic_bdf": entry.get("nic_bdf"),
                "nic_root": nic.get("host_bridge"),
                "numa": nic.get("numa_node"),
                "gpus": [],
            },
        )
        item["gpus"].append(
            {
                "name": entry.get("gpu"),
                "index": gpu.get("index"),
                "bdf": entry.get("gpu_bdf"),
                "root": gpu.get("host_bridge"),
                "numa": gpu.get("numa_node"),
            }
        )
    return [by_rail[r] for r in sorted(by_rail)]


def _layout(sets: Sequence[Mapping[str, Any]]) -> List[Tuple[Any, ...]]:
    """What must be the same on every node of a group for one set of templates to fit them all."""
    return [(s["rail"], s["netdev"], s["nic_root"], tuple((g["index"], g["root"]) for g in s["gpus"])) for s in sets]


def tagged(group: str, node: str, sets: Sequence[Mapping[str, Any]]) -> List[str]:
    """A rail whose RoCE v2 address and GID sit on a VLAN netdev of the NIC's port, not on the port's own.

    dra.net hands a Pod the PCI NIC with the port's netdev and, when the claim configures no address,
    the global addresses of that netdev (dranet v1.4.0, pkg/driver/dra_hooks.go). A VLAN netdev has no
    PCI device: dra.net publishes it as a device of its own, without a PCIe root, and it stays in the
    host's namespace when the port moves. The Pod would get the untagged port without the rail's
    address, and no claim can align the VLAN netdev with a GPU."""
    problems = []
    for item in sets:
        if item["roce_netdev"] and item["roce_netdev"] != item["netdev"]:
            vlan = f"VLAN {item['roce_vlan']}" if item.get("roce_vlan") is not None else "a VLAN"
            problems.append(
                f"{VARIABLE}: dra, but node group {group} ({node}): rail {item['rail']} ({item['nic']}) carries its "
                f"RoCE v2 address and GID on {item['roce_netdev']} ({vlan}), not on the port's netdev "
                f"{item['netdev']}; {NIC_DRIVER} moves {item['netdev']} into the Pod with its own addresses only "
                "and publishes "
                f"{item['roce_netdev']} as a separate device without a PCIe root, so a claim cannot give a Pod the "
                "rail's address next to its GPU; keep device_plugin for this fabric, or put the RoCE address on the "
                "port's netdev (untagged, with the lossless class chosen by DSCP)"
            )
    return problems


def unaligned(group: str, node: str, sets: Sequence[Mapping[str, Any]]) -> List[str]:
    """A GPU whose rail NIC is on another PCIe root: no constraint can pair them."""
    problems = []
    if not any(gpu["root"] for item in sets for gpu in item["gpus"]):
        return [
            f"{VARIABLE}: dra, but node group {group}: the record of {node} has no PCIe roots (stored by an older "
            "release of the collection); run the plan with that node once"
        ]
    for item in sets:
        for gpu in item["gpus"]:
            if not gpu["root"] or gpu["root"] != item["nic_root"]:
                problems.append(
                    f"{VARIABLE}: dra, but node group {group} ({node}): {gpu['name']} ({gpu['bdf']}, PCIe root "
                    f"{gpu['root']}) and its rail NIC {item['nic']} ({item['nic_bdf']}, PCIe root {item['nic_root']}) "
                    f"share no PCIe root, so {PCIE_ROOT} cannot align them (and the GPU driver publishes no NUMA "
                    "attribute for a full GPU); keep device_plugin for this hardware"
                )
    return problems


# --------------------------------------------------------------------------------------------- templates
def _nic_selector(netdevs: Sequence[str]) -> str:
    names = ", ".join(f'"{n}"' for n in sorted(netdevs))
    return f'device.attributes["{NIC_DRIVER}"].ifName in [{names}]'


def _numa_fits(sets: Sequence[Mapping[str, Any]], count: int) -> bool:
    """Several NUMA nodes hold the group's sets, and one of them holds `count`."""
    per_numa: Dict[Any, int] = {}
    for item in sets:
        per_numa[item["numa"]] = per_numa.get(item["numa"], 0) + 1
    return count > 1 and None not in per_numa and len(per_numa) > 1 and max(per_numa.values()) >= count


def claim_template(
    group: str, namespace: str, sets: Sequence[Mapping[str, Any]], count: int, suffix: str, labels: Mapping[str, str]
) -> Dict[str, Any]:
    """A ResourceClaimTemplate for `count` aligned sets of the group's hardware."""
    per_set = max(len(s["gpus"]) for s in sets)
    selector = _nic_selector([s["netdev"] for s in sets])
    requests: List[Dict[str, Any]] = []
    constraints: List[Dict[str, Any]] = []
    for k in range(count):
        gpu = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": per_set}
        nic = {
            "deviceClassName": NIC_CLASS,
            "allocationMode": "ExactCount",
            "count": 1,
            "selectors": [{"cel": {"expression": selector}}],
        }
        requests += [{"name": f"gpu-{k}", "exactly": gpu}, {"name": f"nic-{k}", "exactly": nic}]
        constraints.append({"requests": [f"gpu-{k}", f"nic-{k}"], "matchAttribute": PCIE_ROOT})
    if _numa_fits(sets, count):
        constraints.append({"requests": [f"nic-{k}" for k in range(count)], "matchAttribute": NIC_NUMA})
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": dns_name(f"{group[:50]}-{suffix}"), "namespace": namespace, "labels": dict(labels)},
        "spec": {"spec": {"devices": {"requests": requests, "constraints": constraints}}},
    }


def pairs(sets: Sequence[Mapping[str, Any]]) -> List[str]:
    """What the constraint gives each GPU: the NICs of its root; a shared root names all of them."""
    nics_of: Dict[Any, List[str]] = {}
    for item in sets:
        nics_of.setdefault(item["nic_root"], []).append(item["nic"])
    lines = []
    for item in sets:
        for gpu in item["gpus"]:
            nics = nics_of.get(gpu["root"]) or []
            line = f"{gpu['name']} -> {' or '.join(nics)} (PCIe root {gpu['root']}, NUMA {item['numa']})"
            if len(nics) > 1:
                line += f"; root shared by {len(nics)} rails: aligned to the root, not to {item['nic']}'s switch"
            lines.append(line)
    return lines


def delivered(sets: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """What a full-node claim puts in the Pod, per rail in rail order: the RDMA device and the network
    interface dra.net moves into the Pod's network namespace. Both keep their host names, since the
    templates set no ``interface.name`` (docs/facts.md, "DRA drivers: names and device attributes",
    what a Pod gets from dranet)."""
    return [{"rail": s["rail"], "rdma_device": s["nic"], "netdev": s["netdev"]} for s in sets]


def published(sets: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """What each node of the group must publish for the templates to fit, per rail: the rail NIC's
    interface and PCIe root (dra.net) and the PCIe roots of its GPUs (the GPU driver). validate reads
    the nodes' ResourceSlices against it (proof/dra_devices.py)."""
    return [
        {
            "rail": s["rail"],
            "netdev": s["netdev"],
            "nic_root": s["nic_root"],
            "gpu_roots": [g["root"] for g in s["gpus"]],
        }
        for s in sets
    ]


def plan(
    groups: Sequence[Mapping[str, Any]],
    topologies: Mapping[str, Mapping[str, Any]],
    namespace: str,
    group_label: str,
) -> Dict[str, Any]:
    """The DRA section of the cluster plan. `groups` are the network plan's node groups (their
    ``nodes`` are Kubernetes Node names, the keys of `topologies`); the templates go to `namespace`
    (the rails' NAD namespace, where the Pods that use the rails run). Raises DraPlanError with
    every problem."""
    problems: List[str] = []
    out_groups: List[Dict[str, Any]] = []
    templates: List[Dict[str, Any]] = []
    for group in groups:
        name = group["name"]
        nodes = list(group["nodes"])
        sets = node_sets(topologies[nodes[0]])
        if not sets:
            continue  # no rails: nothing to pair (the network plan refuses a GPU group without rails)
        bad = unaligned(name, nodes[0], sets) + tagged(name, nodes[0], sets)
        problems.extend(bad)
        differs = [n for n in nodes[1:] if _layout(node_sets(topologies[n])) != _layout(sets)]
        if differs:
            problems.append(
                f"{VARIABLE}: dra, but node group {name}: the GPUs' and rail NICs' PCIe roots on "
                f"{', '.join(differs[:4])} differ from {nodes[0]}; one set of claim templates cannot fit both"
            )
        if bad or differs:
            continue
        counts = [(len(sets), "full")] + [(n, f"{n}x") for n in SET_COUNTS if n < len(sets)]
        made = []
        for count, suffix in counts:
            template = claim_template(name, namespace, sets, count, suffix, {group_label: name})
            templates.append(template)
            made.append({"name": template["metadata"]["name"], "sets": count})
        out_groups.append(
            {
                "name": name,
                "nodes": nodes,
                "templates": made,
                "pairs": pairs(sets),
                "rails": delivered(sets),
                "devices": published(sets),
            }
        )
    if problems:
        raise DraPlanError("\n".join(problems))
    return {
        "drivers": {"gpu": GPU_DRIVER, "nic": NIC_DRIVER},
        "groups": out_groups,
        "objects": device_classes() + templates,
    }


# What delivers a rail NIC to a Pod with the device plugins, and not in dra mode.
RAIL_ATTACHMENT_KINDS = ("NetworkAttachmentDefinition", "IPPool", "CIDRPool")


def without_rail_attachments(network: Mapping[str, Any]) -> Dict[str, Any]:
    """The network plan for dra mode: no rail NADs, no rail IP pools and no RDMA shared device plugin.

    dra.net moves the rail NIC's interface (and, with RDMA in exclusive mode, its RDMA link) into the
    Pod's network namespace (dranet documentation, "Interface Status",
    https://dranet.dev/docs/concepts/interface-status). A macvlan or ipvlan NAD takes that interface
    as its master in the host's namespace, and the shared device plugin hands the same RDMA device to
    any number of Pods: two allocators for one NIC, which the scheduler counts apart. So dra mode
    plans neither; the NicNodePolicies, which carry only that plugin, go too. The NCCL ConfigMaps,
    node labels and the rails' address plan stay. The objects that remain keep their labels, so the
    roles prune those dra mode dropped."""
    out = dict(network)
    objects: Dict[str, List[Dict[str, Any]]] = {}
    for part, objs in (network.get("objects") or {}).items():
        kept = []
        for obj in objs:
            if obj.get("kind") in RAIL_ATTACHMENT_KINDS or obj.get("kind") == "NicNodePolicy":
                continue
            if obj.get("kind") == "NicClusterPolicy" and "rdmaSharedDevicePlugin" in (obj.get("spec") or {}):
                obj = dict(obj, spec={k: v for k, v in obj["spec"].items() if k != "rdmaSharedDevicePlugin"})
            kept.append(obj)
        objects[part] = kept
    out["objects"] = objects
    # as the network planner lists them: the CRD of each custom kind a part still applies
    out["crds"] = {
        part: sorted({CRD_NAMES[o["kind"]] for o in objs if o["kind"] in CRD_NAMES}) for part, objs in objects.items()
    }
    out["namespaces"] = sorted(
        {o["metadata"]["namespace"] for objs in objects.values() for o in objs if o["metadata"].get("namespace")}
    )
    return out


def summary_lines(section: Optional[Mapping[str, Any]]) -> List[str]:
    """The plan summary's lines: the mode, and per node group its templates and GPU -> NIC pairs."""
    if not section:
        return [f"device allocation: device plugins ({VARIABLE}: device_plugin)"]
    lines = [
        "device allocation: DRA, GPUs from {gpu}, rail NICs from {nic}".format(**section["drivers"]),
    ]
    for group in section["groups"]:
        made = ", ".join(f"{t['name']} ({t['sets']} set(s))" for t in group["templates"])
        lines.append(f"  {group['name']}: {made}")
        lines.extend("    " + line for line in group["pairs"])
    return lines
