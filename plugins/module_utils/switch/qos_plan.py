# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaves' lossless QoS planned from the fabric intent (gpufabric_fabric) and the switch intent
(gpufabric_switches, checked by intent.switch_rules). Pure: data in, data out.

``plan`` gives each leaf its ports (which rail and node each faces) and its ``qos``, the settings the
hosts depend on, in the operating system's own shape:

- NVUE (Cumulus Linux): the body of a root PATCH on an NVUE revision, the object tree the
  ``nv set`` commands build: ``qos roce`` (mode lossless, or lossy without PFC), the DSCP to switch
  priority map with trust l3, PFC on the lossless switch priority, the switch priority to traffic
  class map, ECN on the lossless traffic class, and the MTU of the ports facing GPU nodes. Object
  model and RoCE defaults: NVIDIA's Cumulus Linux user guide, "RDMA over Converged Ethernet - RoCE"
  and "Quality of Service" (docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/
  Layer-1-and-Switch-Ports/Quality-of-Service/), and the NVUE command reference, QoS
  (docs.nvidia.com/networking-ethernet-software/nvue-reference/Set-and-Unset-Commands/QoS/).
- SONiC: the arguments of the dellemc.enterprise_sonic modules (sonic_qos_maps, sonic_qos_wred,
  sonic_qos_scheduler, sonic_qos_pfc, sonic_qos_buffer, sonic_qos_interfaces and sonic_interfaces for
  the MTU), one dict per module, state merged: a merge adds the collection's maps and profiles and
  leaves the switch's others alone.

In both the lossless priority's traffic class (queue) is the priority itself, and so is the CNPs':
RoCE priority 3 in traffic class 3, CNPs in 6, as NVIDIA's RoCE defaults have them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports as _ports

PROFILE = "default-global"  # NVUE's profile that applies to every port
SONIC_NAME = "GPUFABRIC"  # the name of every map, profile and policy the collection adds on SONiC
SONIC_LOSSLESS = "GPUFABRIC_LOSSLESS"  # the WRED/ECN profile of the lossless queue
SCHEDULER_WEIGHT = 50  # DWRR share of the lossless class and of the rest, as NVIDIA's RoCE default
SONIC_MODULES = (
    "sonic_qos_maps",
    "sonic_qos_wred",
    "sonic_qos_scheduler",
    "sonic_qos_pfc",
    "sonic_qos_buffer",
    "sonic_qos_interfaces",
    "sonic_interfaces",
)


def intent(fabric: Mapping[str, Any], switches: Mapping[str, Any]) -> Dict[str, Any]:
    """What every leaf must agree with the hosts on, the operating system aside; the agreement check
    compares the running configuration with it."""
    ecn = switches["ecn"]  # checked values: the argument spec's defaults are filled in
    return {
        "lossless_priority": int(fabric["lossless_priority"]),
        "cnp_priority": int(fabric["cnp_priority"]),
        "pfc": bool(fabric["pfc"]),
        "dscp": {
            int(fabric["data_dscp"]): int(fabric["lossless_priority"]),
            int(fabric["cnp_dscp"]): int(fabric["cnp_priority"]),
        },
        "data_dscp": int(fabric["data_dscp"]),
        "cnp_dscp": int(fabric["cnp_dscp"]),
        "ecn": {
            "enabled": bool(fabric["ecn"]),
            "min_threshold": int(ecn["min_threshold"]),
            "max_threshold": int(ecn["max_threshold"]),
            "probability": int(ecn["probability"]),
        },
        "port_mtu": int(switches["mtu"]),
        "host_mtu": int(fabric["mtu"]),
    }


def leaf_ports(leaf: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{port: {rail, node}} of a leaf; node None for ports past the last node of their range."""
    out: Dict[str, Dict[str, Any]] = {}
    for item in leaf.get("rails") or []:
        nodes = list(item.get("nodes") or [])
        for index, port in enumerate(_ports.expand(item["ports"], leaf["os"])):
            out[port] = {"rail": int(item["rail"]), "node": nodes[index] if index < len(nodes) else None}
    return out


def plan(fabric: Mapping[str, Any], switches: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{leaf name: {os, address, ports, intent, qos}} for every leaf of the checked switch intent."""
    wanted = intent(fabric, switches)
    out: Dict[str, Dict[str, Any]] = {}
    for leaf in switches.get("leaves") or []:
        ports = leaf_ports(leaf)
        names = sorted(ports, key=_ports.number)
        qos = nvue_patch(wanted, names) if leaf["os"] == "nvue" else sonic_arguments(wanted, names)
        out[leaf["name"]] = {
            "os": leaf["os"],
            "address": leaf.get("address") or leaf["name"],
            "ports": ports,
            "intent": wanted,
            "qos": qos,
        }
    return out


# --------------------------------------------------------------------------------------------- NVUE
def nvue_patch(wanted: Mapping[str, Any], ports: List[str]) -> Dict[str, Any]:
    """The body of a root PATCH on an NVUE revision (``PATCH /nvue_v1/?rev=ID``)."""
    lossless, cnp = wanted["lossless_priority"], wanted["cnp_priority"]
    ecn = wanted["ecn"]
    qos: Dict[str, Any] = {
        # nv set qos roce mode lossless|lossy: the buffer pools and ETS of NVIDIA's RoCE profile.
        "roce": {"enable": "on", "mode": "lossless" if wanted["pfc"] else "lossy"},
        # nv set qos mapping default-global trust l3 / dscp N switch-priority P
        "mapping": {
            PROFILE: {
                "trust": "l3",
                "dscp": {str(d): {"switch-priority": p} for d, p in sorted(wanted["dscp"].items())},
            }
        },
        # nv set qos egress-queue-mapping default-global switch-priority P traffic-class P
        "egress-queue-mapping": {
            PROFILE: {"switch-priority": {str(p): {"traffic-class": p} for p in sorted({lossless, cnp})}}
        },
        # nv set qos congestion-control default-global traffic-class 3 ecn|min-threshold|max-threshold|probability
        "congestion-control": {
            PROFILE: {
                "traffic-class": {
                    str(lossless): {
                        "ecn": "enable" if ecn["enabled"] else "disable",
                        "min-threshold": ecn["min_threshold"],
                        "max-threshold": ecn["max_threshold"],
                        "probability": ecn["probability"],
                    }
                }
            }
        },
    }
    if wanted["pfc"]:
        # nv set qos pfc default-global switch-priority P / tx enable / rx enable
        qos["pfc"] = {PROFILE: {"switch-priority": {str(lossless): {}}, "tx": "enable", "rx": "enable"}}
    # nv set interface swpN link mtu M (the type is what nv config show names it)
    interfaces = {port: {"type": "swp", "link": {"mtu": wanted["port_mtu"]}} for port in ports}
    return {"qos": qos, "interface": interfaces}


# --------------------------------------------------------------------------------------------- SONiC
def sonic_arguments(wanted: Mapping[str, Any], ports: List[str]) -> Dict[str, Dict[str, Any]]:
    """{module: its arguments} for the dellemc.enterprise_sonic QoS modules, state merged.

    Forwarding groups are named by their traffic class: a DSCP maps to forwarding group "P", which
    goes to queue P and priority group P; PFC pauses priority P."""
    lossless, cnp = wanted["lossless_priority"], wanted["cnp_priority"]
    ecn = wanted["ecn"]
    classes = sorted({lossless, cnp})
    maps = {
        "dscp_maps": [
            {
                "name": SONIC_NAME,
                "entries": [{"dscp": d, "fwd_group": str(p)} for d, p in sorted(wanted["dscp"].items())],
            }
        ],
        "fwd_group_queue_maps": [
            {"name": SONIC_NAME, "entries": [{"fwd_group": str(p), "queue_index": p} for p in classes]}
        ],
        "fwd_group_pg_maps": [{"name": SONIC_NAME, "entries": [{"fwd_group": str(p), "pg_index": p} for p in classes]}],
        "pfc_priority_queue_maps": [{"name": SONIC_NAME, "entries": [{"dot1p": lossless, "queue_index": lossless}]}],
        "pfc_priority_pg_maps": [{"name": SONIC_NAME, "entries": [{"dot1p": lossless, "pg_index": lossless}]}],
    }
    wred = {
        "name": SONIC_LOSSLESS,
        "ecn": "all" if ecn["enabled"] else "none",
        "green": {
            "enable": ecn["enabled"],
            "min_threshold": ecn["min_threshold"],
            "max_threshold": ecn["max_threshold"],
            "drop_probability": ecn["probability"],
        },
    }
    # CNPs strictly first, the lossless class and the rest in equal DWRR shares.
    schedulers = [{"sequence": cnp, "scheduler_type": "strict"}]
    schedulers += [
        {"sequence": q, "scheduler_type": "dwrr", "weight": SCHEDULER_WEIGHT} for q in sorted({0, lossless} - {cnp})
    ]
    interfaces = []
    for port in ports:
        entry: Dict[str, Any] = {
            "name": port,
            "qos_maps": {
                "dscp_fwd_group": SONIC_NAME,
                "fwd_group_queue": SONIC_NAME,
                "fwd_group_pg": SONIC_NAME,
                "pfc_priority_queue": SONIC_NAME,
                "pfc_priority_pg": SONIC_NAME,
            },
            "queues": [{"id": lossless, "wred_profile": SONIC_LOSSLESS}],
            "scheduler_policy": SONIC_NAME,
        }
        if wanted["pfc"]:
            entry["pfc"] = {"priorities": [{"dot1p": lossless, "enable": True}]}
        interfaces.append(entry)
    return {
        "sonic_qos_maps": {"config": maps, "state": "merged"},
        "sonic_qos_wred": {"config": [wred], "state": "merged"},
        "sonic_qos_scheduler": {"config": [{"name": SONIC_NAME, "schedulers": schedulers}], "state": "merged"},
        "sonic_qos_pfc": {"config": {"counter_poll": True}, "state": "merged"},
        # QoS buffers initialised from the system's defaults; the collection sets no pool or profile of
        # its own (the module needs the init before any).
        "sonic_qos_buffer": {"config": {"buffer_init": True}, "state": "merged"},
        "sonic_qos_interfaces": {"config": interfaces, "state": "merged"},
        "sonic_interfaces": {
            "config": [{"name": port, "mtu": wanted["port_mtu"]} for port in ports],
            "state": "merged",
        },
    }
