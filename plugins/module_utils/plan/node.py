# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node plan: checked variables + one node's discovered facts -> what every host role does.

``plan_node(values, facts)`` is pure. ``values`` are the node's variables after ``_intent.check``
and ``_intent_rules`` (defaults filled); ``facts`` holds what the plan play read from the node:
``ansible`` (setup facts), ``topology`` (topology_facts), ``gpudirect`` (gpudirect_facts),
``doca`` (doca_ofed_facts), ``doca_index`` (doca_repo_info, when DOCA-OFED is managed) and
``driver_index`` (doca_repo_info on the driver repository, when the collection installs the host
driver).

The result has one section per host role; roles read their section and never recompute a value
it holds. Every refusal is collected, so one run names every problem of the node, each with the
variable, the value and what would be allowed; ``PlanError`` carries them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import IntentError, show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.network_rules import tos_for
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import version
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_driver as _plan_gpu_driver
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import ncclxml as _ncclxml
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import roce as _qos_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage as _plan_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import validate as _plan_validate
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node_stack import (
    doca_section,
    gds_section,
    gpudirect_section,
    mofed_planned,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

SCHEMA_VERSION = 1

# The roce role's variables in the shape the QoS planner takes (one mapping, used by the plan only).
ROCE_OPTIONS = {
    "backend": "roce_backend",
    "include_storage": "roce_include_storage",
    "interfaces": "roce_interfaces",
    "pfc_priorities": "roce_pfc_priorities",
    "allow_pfc_on_other_priorities": "roce_allow_pfc_on_other_priorities",
    "ecn_priorities": "roce_ecn_priorities",
    "ets": "roce_ets",
    "default_priority": "roce_default_priority",
    "buffer_size": "roce_buffer_size",
    "prio2buffer": "roce_prio2buffer",
    "cable_len": "roce_cable_len",
    "global_pause_off": "roce_global_pause_off",
    "roce_mode": "roce_cm_roce_mode",
    "set_traffic_class": "roce_set_traffic_class",
    "disable_acs_redirect": "roce_disable_acs_redirect",
    "acs_clear_mask": "roce_acs_clear_mask",
}
NIC_ROLES = ("compute", "storage", "other")


class PlanError(IntentError):
    """Intent and discovered hardware do not make a valid plan; ``problems`` names each cause."""


def fabric_of(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The fabric intent with the ToS byte resolved: the one value hosts, Pods and NICs use."""
    fabric = dict(values.get("gpufabric_fabric") or {})
    fabric["roce_tos"] = tos_for(fabric)
    return fabric


def nccl_version(values: Mapping[str, Any]) -> str:
    problems: List[str] = []
    parsed = version(problems, "gpufabric_nccl_version", values.get("gpufabric_nccl_version"))
    if parsed is None:
        raise PlanError(problems)
    return ".".join(str(p) for p in ((*parsed, 0, 0))[:3])


# --------------------------------------------------------------------------------------------- preflight
def _kernel_tuple(text: Any) -> tuple:
    return version_numbers(text)


def preflight(values: Mapping[str, Any], ansible: Mapping[str, Any], problems: List[str]) -> Dict[str, Any]:
    """Checks of the node itself (OS, architecture, kernel, init system), from setup facts."""
    dist = ansible.get("distribution")
    supported = values.get("plan_supported_distributions") or {}
    allowed = [str(v) for v in supported.get(dist) or []]
    if dist not in supported or not (
        str(ansible.get("distribution_version")) in allowed or str(ansible.get("distribution_major_version")) in allowed
    ):
        listed = ", ".join(f"{d} {'/'.join(map(str, v))}" for d, v in sorted(supported.items()))
        problems.append(
            f"plan_supported_distributions: {dist} {ansible.get('distribution_version')} is not supported on this "
            f"node; allowed: {listed}"
        )
    arch = ansible.get("architecture")
    if arch not in (values.get("plan_supported_architectures") or []):
        problems.append(
            f"plan_supported_architectures: this node is {arch}; allowed: "
            f"{', '.join(values.get('plan_supported_architectures') or [])}"
        )
    minimum = str(values.get("plan_min_kernel") or "0")
    if _kernel_tuple(ansible.get("kernel")) < _kernel_tuple(minimum):
        problems.append(f"plan_min_kernel: kernel {ansible.get('kernel')} is older than {minimum}")
    if values.get("plan_require_systemd", True) and ansible.get("service_mgr") != "systemd":
        problems.append(
            f"plan_require_systemd: the service manager is {ansible.get('service_mgr')}; persistence needs systemd"
        )
    return {
        "os": f"{dist} {ansible.get('distribution_version')}",
        "kernel": ansible.get("kernel"),
        "architecture": arch,
        "vcpus": ansible.get("processor_vcpus") or ansible.get("processor_count"),
        "memory_gib": round((ansible.get("memtotal_mb") or 0) / 1024.0, 1),
        "virtualization": "{}/{}".format(
            ansible.get("virtualization_role") or "n/a", ansible.get("virtualization_type") or "n/a"
        ),
        "sysroot": values.get("gpufabric_sysroot"),
    }


# --------------------------------------------------------------------------------------------- roce
def roce_section(
    values: Mapping[str, Any], fabric: Mapping[str, Any], topology: Mapping[str, Any], problems: List[str]
) -> Optional[Dict[str, Any]]:
    options = {key: values.get(var) for key, var in ROCE_OPTIONS.items()}
    known = set()
    for nic in topology.get("nics") or []:
        known.update(nic.get("netdevs") or [])
        if nic.get("rdma_device"):
            known.add(nic["rdma_device"])
    for name in options["interfaces"] or []:
        if name not in known:
            problems.append(
                f"roce_interfaces: {name!r} is not an RDMA NIC of this node; "
                f"discovered: {', '.join(sorted(known)) or 'none'}"
            )
    if options["disable_acs_redirect"] and topology.get("virtualized"):
        problems.append(
            "roce_disable_acs_redirect: true, but this node is a virtual machine; ACS must stay on in VMs "
            "(enable ATS on the NIC instead)"
        )
    plan = _qos_plan.build_plan(fabric, options, topology, values.get("gpufabric_sysroot") or "/")
    if not plan["interfaces"] and not options["interfaces"]:
        problems.append(
            "roce_interfaces: empty, and discovery found no rail (compute) NIC"
            + (" or storage NIC" if options["include_storage"] else "")
            + " on this node; name the NICs to configure, or set roce_include_storage: true"
        )
    plan["rails"] = _qos_plan.rail_summary(plan)
    plan["acs_redirect"] = acs_redirect_plan(topology, bool(options["disable_acs_redirect"]))
    plan["check_rail_consistency"] = bool(values.get("roce_check_rail_consistency", True))
    return plan


def acs_redirect_plan(topology: Mapping[str, Any], clear: bool) -> List[Dict[str, Any]]:
    """Every PCIe bridge with ACS redirect on a GPU-NIC peer-to-peer path, and what the run does about it."""
    out = []
    for warning in topology.get("warnings") or []:
        if warning.get("class") != "acs_redirect":
            continue
        out.append(
            {
                "bridge": warning.get("device"),
                "paths": list(warning.get("paths") or []),
                "action": "cleared by pcie_acs (roce_disable_acs_redirect: true)"
                if clear
                else "left on: GPUDirect RDMA peer-to-peer traffic goes up to the root complex (P2P lost); "
                "set roce_disable_acs_redirect: true to clear it",
            }
        )
    return out


# --------------------------------------------------------------------------------------------- nccl
def nccl_section(
    values: Mapping[str, Any], fabric: Mapping[str, Any], topology: Mapping[str, Any], problems: List[str]
) -> Optional[Dict[str, Any]]:
    gid = values.get("nccl_config_ib_gid_index")
    try:
        entries = _nccl.plan(
            topology,
            fabric,
            nccl_version(values),
            values.get("nccl_config_socket_ifname"),
            topo_file=values.get("nccl_config_topo_file") or None,
            gid_index_override=None if gid is None or int(gid) < 0 else int(gid),
            gdr_level=values.get("nccl_config_net_gdr_level"),
            extra=values.get("nccl_config_extra") or {},
        )
    except (_nccl.NcclPlanError, PlanError) as exc:
        problems.append(str(exc))
        return None
    return {
        "entries": dict(entries),
        "traffic_class": int(fabric["roce_tos"]),
        # The NCCL topology file (NCCL_TOPO_FILE) of the discovered GPUs, NICs and PCIe tree: what
        # nccl_config writes (unless the user gives the file) and the topology role's nccl-topo.xml.
        "topology_xml": _ncclxml.render_nccl_topo_xml(dict(topology)),
    }


# --------------------------------------------------------------------------------------------- node
def plan_node(values: Mapping[str, Any], facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The node's plan; raises PlanError naming every problem."""
    problems: List[str] = []
    ansible = facts.get("ansible") or {}
    topology = facts.get("topology") or {}
    if not topology.get("gpus"):
        problems.append(
            f"gpufabric_sysroot: discovery under {show(values.get('gpufabric_sysroot'))} found no NVIDIA GPU on this "
            "node; a GPU node needs at least one (check the sysroot, or move the host out of gpu_nodes)"
        )
    fabric = fabric_of(values)
    doca = facts.get("doca") or {}
    plan: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "k8s_node_name": values.get("gpufabric_k8s_node_name"),
        "fabric": fabric,
        "nccl_version": None,
        "preflight": preflight(values, ansible, problems),
    }
    try:
        plan["nccl_version"] = nccl_version(values)
    except PlanError as exc:
        problems.extend(exc.problems)
    plan["doca_ofed"] = doca_section(values, ansible, doca, facts.get("doca_index"), problems)
    plan["roce"] = roce_section(values, fabric, topology, problems)
    # The RDMA and GDS decisions take the driver the node will run: its own, or the GPU Operator's.
    driver = _plan_gpu_driver.plan_driver(
        values, facts.get("gpudirect") or {}, ansible.get("packages"), problems, facts.get("driver_index"), ansible
    )
    plan["gpu_driver"] = driver
    gpudirect = _plan_gpu_driver.effective_facts(facts.get("gpudirect") or {}, driver)
    # Without a driver (none loaded, or an operator module type that cannot be resolved) the RDMA and
    # GDS refusals would only repeat the driver section's: that one is kept.
    known = gpudirect.get("driver_version") and (driver["managed_by"] == "host" or driver.get("kernel_module"))
    follow = problems if known else []
    rdma = plan["gpudirect_rdma"] = gpudirect_section(values, gpudirect, mofed_planned(values, doca), follow)
    rdma["peermem_loaded_by"] = _plan_gpu_driver.loaded_by(driver, rdma["method"] == "peermem")
    storage = plan["storage_client"] = _plan_storage.storage_section(
        values, topology, fabric, plan["doca_ofed"], doca, problems
    )
    gds = plan["gpudirect_storage"] = gds_section(values, rdma["decision"], gpudirect, topology, follow, storage)
    if gds is not None:
        gds["nvidia_fs_loaded_by"] = _plan_gpu_driver.loaded_by(driver, gds["mode"] == "nvidia_fs")
    if plan["nccl_version"] is not None:
        plan["nccl"] = nccl_section(values, fabric, topology, problems)
    plan["validate"] = _plan_validate.validate_section(values, plan)
    # What an upgrade changes here: installed and loaded versions against the targets above.
    plan["upgrade"] = _upgrade.node_section(plan, facts)
    if problems:
        raise PlanError(problems)
    return plan
