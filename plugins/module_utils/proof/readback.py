# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host read-back: what a node holds now, compared with what its plan told the host roles to make.

``checks(node, plan, live)`` returns check records in the shape of ``_gates`` (category
``host``), one per setting, each with the expected and the found value as text, so the report,
its JUnit and the failure list name the node, the NIC or file, the setting and both values.

``plan`` is the node's ``gpufabric_node_plan`` (sections ``roce``, ``nccl``,
``gpudirect_rdma``, ``gpudirect_storage`` and ``validate``, see ``_plan_validate``); ``live``
holds what the validate role read on the node with the collection's read-only modules:

* ``qos``: the result of ``roce_qos`` run in check mode over ``plan.roce.interfaces`` (each
  interface's ``before`` is the state it read; a failed run has ``failed`` and ``msg``);
* ``netns``: the result of ``rdma_netns`` in check mode (``runtime_before``);
* ``acs``: the result of ``pcie_acs`` in check mode over the planned endpoints (``bridges[]``
  with the ``before`` register value);
* ``topology``: ``topology_facts`` read now (ACS redirect warnings, IOMMU groups);
* ``gpudirect``: ``gpudirect_facts`` read now (loaded modules, the DMA-BUF decision);
* ``nccl_conf``, ``cufile_json``, ``cmdline``: the text of ``/etc/nccl.conf``, ``cufile.json``
  and ``/proc/cmdline``, or None when the file could not be read;
* ``services``: the ``services`` that ``service_limits`` read for the planned
  ``gpudirect_rdma.memlock_units`` (the container runtimes), or None when it could not read them.

A part of ``live`` that is absent (not read: the role's section is off) gives no check; a part
that was read and failed gives a failing check that says why. Pure; no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import limits as _limits
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import ACS_REDIRECT_MASK
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check

Check = Dict[str, Any]

# roce_qos state keys -> the setting's name in the report.
QOS_NAMES = {
    "trust": "QoS trust mode",
    "dscp2prio": "DSCP to priority map",
    "pfc": "PFC priorities",
    "ecn": "ECN (DCQCN) per priority",
    "cnp_dscp": "CNP DSCP",
    "cnp_prio": "CNP priority",
    "traffic_class": "verbs traffic class (ToS)",
    "roce_tos": "RDMA-CM default ToS",
    "roce_mode": "RDMA-CM default RoCE mode",
    "mtu": "MTU",
    "global_pause": "global pause",
    "default_prio": "default priority",
    "ets": "ETS",
    "buffer_size": "receive buffer sizes",
    "prio2buffer": "priority to buffer map",
    "cable_len": "cable length",
}
PASSTHROUGH_ARGS = ("iommu=pt", "iommu.passthrough=1", "iommu.passthrough=y", "iommu.passthrough=on", "amd_iommu=pt")


def _host(node: str, subject: str, name: str, found: Any, expected: Any, passed: bool, detail: str = "") -> Check:
    return _check(
        "host",
        node,
        subject,
        name,
        measured=found,
        expected=expected,
        threshold=expected,
        unit="",
        passed=passed,
        detail=detail,
    )


def read_failed(result: Mapping[str, Any]) -> bool:
    """A module run that could not read: failed, or (registered with ``failed_when: false``, which
    clears ``failed``) carrying the ``msg`` these read-only modules return only on failure."""
    return bool(result.get("failed")) or bool(result.get("msg"))


def show_qos(key: str, value: Any) -> str:
    """A QoS value as people read it (priorities enabled, DSCP -> priority pairs, ...)."""
    if value is None:
        return "not readable"
    if key == "pfc" and isinstance(value, list):
        on = [str(p) for p, flag in enumerate(value) if flag]
        return "on for priority " + ",".join(on) if on else "off"
    if key == "dscp2prio" and isinstance(value, Mapping):
        return ", ".join(f"DSCP {d} -> {'/'.join(str(p) for p in (v or [])) or 'none'}" for d, v in value.items())
    if key == "ecn" and isinstance(value, Mapping):
        return ", ".join(f"{k.replace('roce_', '')}={v}" for k, v in sorted(value.items()))
    if key == "global_pause" and isinstance(value, Mapping):
        return ", ".join(f"{k} {'on' if v else 'off'}" for k, v in sorted(value.items()))
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


# --------------------------------------------------------------------------------------------- QoS
def qos_checks(node: str, plan: Mapping[str, Any], qos: Mapping[str, Any]) -> List[Check]:
    interfaces = list((plan.get("roce") or {}).get("interfaces") or [])
    if not interfaces:
        return []
    if read_failed(qos):
        return [
            _host(
                node,
                "QoS",
                "QoS settings readable",
                "not read",
                "read",
                False,
                f"roce_qos could not read the NICs: {qos.get('msg') or 'no message'}",
            )
        ]
    live = {i.get("netdev"): i for i in qos.get("interfaces") or []}
    out: List[Check] = []
    for iface in interfaces:
        subject = iface.get("rdma_device") or iface["netdev"]
        where = f"{iface['netdev']}, rail {iface.get('rail')}" if iface.get("rail") is not None else iface["netdev"]
        read = live.get(iface["netdev"])
        if read is None:
            out.append(_host(node, subject, "QoS settings readable", "not read", "read", False, f"{where}: not read"))
            continue
        before = read.get("before") or {}
        want = _qos_engine.desired_state(iface, before)
        for key in want:
            found, expected = before.get(key), want[key]
            out.append(
                _host(
                    node,
                    subject,
                    QOS_NAMES.get(key, key),
                    show_qos(key, found),
                    show_qos(key, expected),
                    found == expected,
                    where,
                )
            )
    return out


def netns_check(node: str, plan: Mapping[str, Any], netns: Mapping[str, Any]) -> List[Check]:
    want = (plan.get("validate") or {}).get("netns_mode")
    if not want:
        return []
    if read_failed(netns):
        return [_host(node, "rdma", "RDMA netns mode", "not read", want, False, str(netns.get("msg") or ""))]
    found = netns.get("runtime_before")
    return [_host(node, "rdma", "RDMA netns mode", str(found), want, found == want, "rdma system show")]


# --------------------------------------------------------------------------------------------- PCIe
def acs_checks(node: str, plan: Mapping[str, Any], acs: Optional[Mapping[str, Any]], topology: Mapping[str, Any]):
    out: List[Check] = []
    if topology and not topology.get("virtualized"):
        on = sorted({w.get("device") for w in topology.get("warnings") or [] if w.get("class") == "acs_redirect"})
        hint = "" if not on else "; clear it with roce_disable_acs_redirect: true (bare metal), or enable ATS"
        out.append(
            _host(
                node,
                "PCIe",
                "ACS redirect off on the GPU-NIC peer-to-peer paths",
                "on at " + ", ".join(on) if on else "off",
                "off",
                not on,
                "bridges on the PIX/PXB paths between rail GPUs and NICs, from discovery" + hint,
            )
        )
    if acs is not None and (plan.get("validate") or {}).get("acs_clear"):
        if read_failed(acs):
            out.append(_host(node, "PCIe", "ACS redirect cleared", "not read", "off", False, str(acs.get("msg"))))
            return out
        bridges = [b for b in acs.get("bridges") or [] if b.get("before") is not None]
        still = [f"{b['bdf']} ({b['before']})" for b in bridges if int(str(b["before"]), 16) & ACS_REDIRECT_MASK]
        out.append(
            _host(
                node,
                "PCIe",
                "ACS redirect cleared above the rail GPUs and NICs",
                "on at " + ", ".join(still) if still else f"off on {len(bridges)} bridges",
                f"off on {len(bridges)} bridges",
                not still,
                "ACS control read with setpci (roce_disable_acs_redirect)",
            )
        )
    return out


def iommu_mode(iommu: Mapping[str, Any], cmdline: Optional[str]) -> str:
    """off (no IOMMU groups: DMA is not remapped), passthrough (iommu=pt and the like on the kernel
    command line) or translated."""
    if not (iommu or {}).get("enabled"):
        return "off"
    args = (cmdline or "").split()
    return "passthrough" if any(a in PASSTHROUGH_ARGS for a in args) else "translated"


def iommu_check(node: str, plan: Mapping[str, Any], topology: Mapping[str, Any], cmdline: Optional[str]):
    want = (plan.get("validate") or {}).get("iommu")
    if not want or not topology:
        return []
    mode = iommu_mode(topology.get("iommu") or {}, cmdline)
    gds = (plan.get("gpudirect_storage") or {}).get("mode")
    iommu_args = [a for a in (cmdline or "").split() if "iommu" in a]
    detail = f"GDS mode {gds}; {(topology.get('iommu') or {}).get('groups', 0)} IOMMU groups"
    detail += f"; kernel command line: {' '.join(iommu_args) or 'no iommu option'}"
    return [_host(node, "IOMMU", "IOMMU mode for GDS", mode, " or ".join(want), mode in want, detail)]


# --------------------------------------------------------------------------------------------- drivers
def module_checks(node: str, plan: Mapping[str, Any], gpudirect: Mapping[str, Any]) -> List[Check]:
    section = plan.get("validate") or {}
    out: List[Check] = []
    loaded = set(gpudirect.get("modules") or [])
    flags = {
        "nvidia": gpudirect.get("driver_loaded"),
        "nvidia_peermem": gpudirect.get("peermem_loaded"),
        "nvidia_fs": gpudirect.get("nvidia_fs_loaded"),
    }
    for module in section.get("modules") or []:
        name = module["name"]
        ok = bool(flags.get(name)) or name in loaded
        detail = f"{module.get('why')}, loaded by {module.get('loaded_by')}"
        out.append(_host(node, name, "kernel module loaded", "loaded" if ok else "not loaded", "loaded", ok, detail))
    if section.get("rdma_method") == "dmabuf":
        dmabuf = ((gpudirect.get("decision") or {}).get("dmabuf")) or {}
        blockers = list(dmabuf.get("blockers") or [])
        driver = f"driver {gpudirect.get('driver_flavour')} {gpudirect.get('driver_version')}"
        out.append(
            _host(
                node,
                "GPUDirect RDMA",
                "DMA-BUF in effect",
                "usable" if dmabuf.get("ok") else "blocked: " + "; ".join(blockers),
                "usable",
                bool(dmabuf.get("ok")),
                f"{driver}, kernel {gpudirect.get('kernel_release')}",
            )
        )
    return out


# --------------------------------------------------------------------------------------------- files
def nccl_conf_checks(node: str, plan: Mapping[str, Any], text: Optional[str]) -> List[Check]:
    path = ((plan.get("validate") or {}).get("files") or {}).get("nccl_conf")
    entries = (plan.get("nccl") or {}).get("entries") or {}
    if not path or not entries:
        return []
    if text is None:
        return [_host(node, path, "present", "missing", "present", False, "NCCL reads its defaults from this file")]
    found = _nccl.parse(text)
    out = []
    for key, value in entries.items():
        have = found.get(key)
        out.append(_host(node, path, key, "absent" if have is None else have, str(value), have == str(value)))
    extra = [f"{k}={v}" for k, v in found.items() if k not in entries]
    out.append(
        _host(
            node,
            path,
            "no entries beyond the plan",
            ", ".join(extra) or "none",
            "none",
            not extra,
            "NCCL applies every entry of the file to every job on the node",
        )
    )
    return out


def _cufile_expected(data: Dict[str, Any], plan: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    gds = plan.get("gpudirect_storage") or {}
    desired = _cufile.build_desired(
        data,
        compat_mode=gds.get("compat_mode"),
        force_compat_mode=gds.get("force_compat_mode"),
        rdma_dev_addr_list=gds.get("rdma_dev_addr_list"),
        use_pci_p2pdma=gds.get("use_pci_p2pdma"),
        filesystems=gds.get("filesystems") or {},
        settings=(plan.get("validate") or {}).get("cufile_settings") or {},
    )
    return [(".".join(path), value) for path, value in _cufile.leaves(desired)]


def cufile_checks(node: str, plan: Mapping[str, Any], text: Optional[str]) -> List[Check]:
    path = ((plan.get("validate") or {}).get("files") or {}).get("cufile_json")
    if not path:
        return []
    if text is None:
        return [_host(node, path, "present", "missing", "present", False, "cuFile reads its settings from this file")]
    try:
        data = _cufile.parse(text)
        wanted = _cufile_expected(data, plan)
    except ValueError as exc:
        return [_host(node, path, "readable", "not readable", "valid JSON", False, str(exc))]
    out = []
    for dotted, value in wanted:
        have = _cufile.get_path(data, dotted, _MISSING)
        same = have is not _MISSING and _cufile.same(have, value)
        shown = "absent" if have is _MISSING else _cufile.render_value(have)
        out.append(_host(node, path, dotted, shown, _cufile.render_value(value), same))
    return out


_MISSING = object()


def memlock_checks(node: str, plan: Mapping[str, Any], services: Optional[List[Mapping[str, Any]]]) -> List[Check]:
    """The locked-memory limit each running planned service (a container runtime) really has: a limit
    written into its unit reaches its process, and the containers it starts, only after a restart."""
    rdma = plan.get("gpudirect_rdma") or {}
    planned = str(rdma.get("memlock") or "")
    units = list(rdma.get("memlock_units") or [])
    if not planned or not units:
        return []
    name = "locked-memory limit of the running process"
    if services is None:
        return [_host(node, ", ".join(units), name, "not read", planned, False, "the services could not be read")]
    out = []
    for service in services:
        if not service.get("active") or service.get("memlock") is None:
            continue  # not installed or not running: no process has a limit to check
        soft = service["memlock"]["soft"]
        expected = planned if planned == "unlimited" else f"{planned} KiB"
        passed = _limits.at_least(soft, planned)
        detail = "" if passed else f"restart {service['unit']} (drained) so that its process gets the limit of its unit"
        out.append(_host(node, service["unit"], name, _limits.shown(soft), expected, passed, detail))
    return out


# --------------------------------------------------------------------------------------------- all
def checks(node: str, plan: Mapping[str, Any], live: Mapping[str, Any]) -> List[Check]:
    """Every read-back check of one node (see the module docstring for ``live``)."""
    out: List[Check] = []
    if live.get("qos") is not None:
        out += qos_checks(node, plan, live["qos"])
    if live.get("netns") is not None:
        out += netns_check(node, plan, live["netns"])
    out += acs_checks(node, plan, live.get("acs"), live.get("topology") or {})
    out += iommu_check(node, plan, live.get("topology") or {}, live.get("cmdline"))
    if live.get("gpudirect") is not None:
        out += module_checks(node, plan, live["gpudirect"])
    if "nccl_conf" in live:
        out += nccl_conf_checks(node, plan, live["nccl_conf"])
    if "cufile_json" in live:
        out += cufile_checks(node, plan, live["cufile_json"])
    if "services" in live:
        out += memlock_checks(node, plan, live["services"])
    return out
