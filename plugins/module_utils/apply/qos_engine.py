# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE QoS apply engine: read -> diff -> apply -> read back, per interface of a plan.

Runs the tools (the NIC driver's QoS tool, ``mlnx_qos`` or iproute2 ``dcb`` for mlx5, see
plugins/module_utils/nic; ``ethtool``) through one ``Runner`` and reads
and writes sysfs/configfs/debugfs through one ``Sysroot`` (``_host.py``), so the same code runs
in the ``roce_qos`` module, in the boot-time re-apply script (``roles/roce/files/roce_apply.py``,
which carries this file and the module_utils it imports onto the host) and in tests with fakes.

Errors: ``QosError`` (a setting cannot be applied or read back), ``CommandError`` (a tool
failed), ``ParseError`` (a tool printed something unreadable; named after the tool call and its
netdev). ``ENGINE_ERRORS`` lists them, with OSError, for callers that report any of them.

Pure Python (>= 3.8), stdlib only, no AnsibleModule.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.base import NicDriver, QosTool, query
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.registry import NicDriverError, nic_driver
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import (
    parse_ethtool_pause,
    parse_traffic_class,
    roce_active_mtu,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import CommandError, Host
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, integer_or_none


class QosError(Exception):
    """A tool failed, printed something unparseable, or a setting cannot be applied."""


class PartialApply(QosError):
    """Applying an interface failed after the run had changed something: ``result`` is the run's
    result up to the failure (every interface handled before it, then the failing one with
    ``failed``, ``error``, the ``actions`` it had applied and what it reads ``after``), with
    ``changed`` true when any action was applied."""

    def __init__(self, message: str, result: Dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


ENGINE_ERRORS = (QosError, CommandError, ParseError, OSError)


def _driver(iface: Dict[str, Any]) -> NicDriver:
    """The NIC driver of a plan interface (the plan names none today: the default, mlx5_core)."""
    try:
        return nic_driver(iface.get("driver"))
    except NicDriverError as exc:
        raise QosError(f"{iface['netdev']}: {exc}") from None


def _tools(driver: NicDriver) -> Dict[str, QosTool]:
    return {t.name: t for t in driver.qos_tools}


def choose_backend(requested: str, io: Host, driver: Optional[NicDriver] = None) -> str:
    """The QoS tool to use: ``requested`` when installed, for ``auto`` the driver's first installed."""
    tools = _tools(driver or nic_driver(None))
    if requested in tools:
        if not io.runner.which(requested):
            raise QosError(f"backend {requested} requested but the {requested} command is not installed")
        return requested
    for name in tools:
        if io.runner.which(name):
            return name
    known = " nor ".join(f"{t.name} ({t.source})" for t in tools.values())
    raise QosError(f"neither {known} is installed")


def _read_int(io: Host, rel: str) -> Optional[int]:
    words = (io.sysroot.read(rel) or "").split()
    return integer_or_none(words[0]) if words else None


def _sysfs_paths(iface: Dict[str, Any]) -> Dict[str, str]:
    nd = iface["netdev"]
    dev = iface.get("rdma_device") or ""
    port = iface.get("port", 1)
    return {
        "ecn": _driver(iface).ecn_dir(nd),
        "mtu": f"sys/class/net/{nd}/mtu",
        "tc": f"sys/class/infiniband/{dev}/tc/1/traffic_class",
        "cm_dev": f"sys/kernel/config/rdma_cm/{dev}",
        "cm_port": f"sys/kernel/config/rdma_cm/{dev}/ports/{port}",
    }


def _tool(iface: Dict[str, Any], backend: str) -> QosTool:
    """The QoS tool called ``backend`` for the interface's driver."""
    driver = _driver(iface)
    tool = _tools(driver).get(backend)
    if tool is None:
        raise QosError(f"{iface['netdev']}: backend {backend} does not set the QoS of {driver.name} ports")
    return tool


def read_state(iface: Dict[str, Any], backend: str, io: Host) -> Tuple[Dict[str, Any], Dict[str, Any], List[str]]:
    """Current values of every key the plan manages (None = not readable here).

    Returns (state, raw, warnings); raw keeps the full tool state for apply."""
    warnings = []  # type: List[str]
    raw = _tool(iface, backend).read(iface, io)
    state = {
        "trust": raw.get("trust"),
        "dscp2prio": {d: raw["dscp2prio"].get(int(d), []) for d in sorted(iface["dscp2prio"], key=int)},
        "pfc": raw.get("pfc"),
    }  # type: Dict[str, Any]
    if iface.get("default_prio") is not None:
        state["default_prio"] = raw.get("default_prio")
    if iface.get("ets"):
        state["ets"] = {"prio_tc": raw.get("prio_tc"), "tsa": raw.get("tsa"), "tc_bw": raw.get("tc_bw")}
    if iface.get("buffer_size"):
        state["buffer_size"] = raw.get("buffer_size")
    if iface.get("prio2buffer"):
        state["prio2buffer"] = raw.get("prio2buffer")
    if iface.get("cable_len") is not None:
        state["cable_len"] = raw.get("cable_len")
    _read_ecn(iface, io, state, warnings)
    if iface.get("rdma_device"):
        _read_rdma(iface, io, state, warnings)
    state["mtu"] = _read_int(io, _sysfs_paths(iface)["mtu"])
    if iface.get("global_pause_off"):
        if io.runner.which("ethtool"):
            pause = query(io, parse_ethtool_pause, ["ethtool", "-a", iface["netdev"]])
            state["global_pause"] = {"rx": pause["rx"], "tx": pause["tx"]}
        else:
            warnings.append(f"{iface['netdev']}: ethtool not installed; global pause not checked")
    return state, raw, warnings


def _read_ecn(iface: Dict[str, Any], io: Host, state: Dict[str, Any], warnings: List[str]) -> None:
    """ECN per point and priority and the CNP DSCP/priority: from the ECN sysfs, else debugfs."""
    nd = iface["netdev"]
    driver = _driver(iface)
    ecn = iface.get("ecn") or {}
    if io.sysroot.exists(driver.ecn_dir(nd)):
        state["ecn"] = {}
        for point in driver.ecn_points:
            for prio in ecn.get("priorities") or []:
                state["ecn"][f"{point}/{prio}"] = _read_int(io, driver.ecn_enable(nd, point, prio))
        dscp_file, prio_file = driver.cnp_files(nd)
        state["cnp_dscp"] = _read_int(io, dscp_file)
        state["cnp_prio"] = _read_int(io, prio_file)
        return
    dbg = _debugfs_cnp(iface, io)
    if dbg:
        state["cnp_dscp"] = _read_int(io, dbg[0])
        state["cnp_prio"] = _read_int(io, dbg[1])
    warnings.append(
        f"{nd}: no per-priority ECN sysfs (inbox driver); congestion control priorities follow the "
        "firmware setting ROCE_CC_PRIO_MASK (mlxconfig)"
    )
    if not dbg:
        warnings.append(f"{nd}: CNP DSCP/priority not exposed (no MOFED ecn sysfs, no mlx5 debugfs cc_params)")


def _read_rdma(iface: Dict[str, Any], io: Host, state: Dict[str, Any], warnings: List[str]) -> None:
    """The verbs traffic class and the RDMA-CM default RoCE ToS and mode of the interface's RDMA device."""
    paths = _sysfs_paths(iface)
    if iface.get("traffic_class") is not None:
        if io.sysroot.exists(paths["tc"].rsplit("/", 1)[0]):
            state["traffic_class"] = parse_traffic_class(io.sysroot.read(paths["tc"]))
        else:
            warnings.append(
                f"{iface['rdma_device']}: verbs traffic class not exposed (MOFED only); "
                f"set NCCL_IB_TC={iface['traffic_class']} in workloads"
            )
    if io.sysroot.exists("sys/kernel/config/rdma_cm"):
        mode = io.sysroot.read(paths["cm_port"] + "/default_roce_mode")
        state["roce_tos"] = integer_or_none(io.sysroot.read(paths["cm_port"] + "/default_roce_tos"), 0, 255)
        state["roce_mode"] = mode or None
    else:
        warnings.append(
            f"{iface['rdma_device']}: RDMA-CM configfs (sys/kernel/config/rdma_cm) absent: load rdma_cm "
            "and mount configfs to set the default RoCE ToS/mode"
        )


def _debugfs_cnp(iface: Dict[str, Any], io: Host) -> Optional[Tuple[str, str]]:
    """The driver's debugfs CNP DSCP and priority files of the interface's PCI function, when present."""
    link = f"sys/class/net/{iface['netdev']}/device"
    real = io.sysroot.real(link) if io.sysroot.isdir(link) else None
    bdf = real.rsplit("/", 1)[-1] if real else None
    files = _driver(iface).debugfs_cnp_files(bdf) if bdf else None
    return files if files and io.sysroot.exists(files[0].rsplit("/", 1)[0]) else None


def desired_state(iface: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
    """The plan's values in the shape of ``current`` (keys that cannot be read are dropped)."""
    want = {
        "trust": iface["trust"],
        "dscp2prio": {d: [p] for d, p in iface["dscp2prio"].items()},
        "pfc": list(iface["pfc"]),
        "mtu": iface["mtu"],
    }  # type: Dict[str, Any]
    if iface.get("default_prio") is not None:
        want["default_prio"] = iface["default_prio"]
    if iface.get("ets"):
        want["ets"] = {
            "prio_tc": list(iface["ets"]["prio_tc"]),
            "tsa": list(iface["ets"]["tsa"]),
            "tc_bw": list(iface["ets"]["tc_bw"]),
        }
    if iface.get("buffer_size"):
        want["buffer_size"] = list(iface["buffer_size"])
    if iface.get("prio2buffer"):
        want["prio2buffer"] = list(iface["prio2buffer"])
    if iface.get("cable_len") is not None:
        want["cable_len"] = iface["cable_len"]
    if "ecn" in current:
        flag = 1 if (iface.get("ecn") or {}).get("enabled") else 0
        want["ecn"] = {k: flag for k in current["ecn"]}
    for key in ("cnp_dscp", "cnp_prio", "traffic_class"):
        if key in current and iface.get(key) is not None:
            want[key] = iface[key]
    if "roce_tos" in current:
        want["roce_tos"] = iface["roce_tos"]
    if "roce_mode" in current and iface.get("roce_mode"):
        want["roce_mode"] = iface["roce_mode"]
    if "global_pause" in current:
        want["global_pause"] = {"rx": False, "tx": False}
    return want


def diff_keys(current: Dict[str, Any], desired: Dict[str, Any]) -> List[str]:
    return sorted(k for k in desired if current.get(k) != desired[k])


def apply_changes(
    iface: Dict[str, Any],
    backend: str,
    changed: List[str],
    want: Dict[str, Any],
    raw: Dict[str, Any],
    io: Host,
    done: Optional[List[str]] = None,
) -> List[str]:
    """Make the host match ``want`` for the ``changed`` keys. Returns what was done (``done``, when
    given, is filled as it goes: after a failure it holds what was applied before it)."""
    nd = iface["netdev"]
    done = [] if done is None else done
    if "mtu" in changed:
        # MTU first: the RoCE path MTU follows the netdev MTU.
        io.sysroot.write(_sysfs_paths(iface)["mtu"], f"{want['mtu']}\n")
        done.append(f"mtu={want['mtu']}")
    for cmd in _tool(iface, backend).commands(nd, changed, want, raw):
        io.runner.check(cmd)
        done.append(" ".join(cmd))
    _apply_ecn(iface, changed, want, io, done)
    _apply_rdma(iface, changed, want, io, done)
    if "global_pause" in changed:
        io.runner.check(["ethtool", "-A", nd, "autoneg", "off", "rx", "off", "tx", "off"])
        done.append(f"ethtool -A {nd} autoneg off rx off tx off")
    return done


def _apply_ecn(iface: Dict[str, Any], changed: List[str], want: Dict[str, Any], io: Host, done: List[str]) -> None:
    nd = iface["netdev"]
    driver = _driver(iface)
    if "ecn" in changed:
        for key, flag in sorted(want["ecn"].items()):
            point, prio = key.split("/")
            io.sysroot.write(driver.ecn_enable(nd, point, prio), f"{flag}\n")
        done.append("ecn " + ",".join(f"{k}={v}" for k, v in sorted(want["ecn"].items())))
    if "cnp_dscp" in changed or "cnp_prio" in changed:
        files = driver.cnp_files(nd) if io.sysroot.exists(driver.ecn_dir(nd)) else _debugfs_cnp(iface, io)
        if files:
            io.sysroot.write(files[0], f"{want['cnp_dscp']}\n")
            io.sysroot.write(files[1], f"{want['cnp_prio']}\n")
        done.append(f"cnp dscp={want['cnp_dscp']} prio={want['cnp_prio']}")


def _apply_rdma(iface: Dict[str, Any], changed: List[str], want: Dict[str, Any], io: Host, done: List[str]) -> None:
    paths = _sysfs_paths(iface)
    if "traffic_class" in changed:
        io.sysroot.write(paths["tc"], f"{want['traffic_class']}\n")
        done.append(f"traffic_class={want['traffic_class']}")
    if "roce_tos" in changed or "roce_mode" in changed:
        io.sysroot.mkdir(paths["cm_dev"])
        if not io.sysroot.exists(paths["cm_port"]):  # configfs creates ports/N on mkdir; a lab tree does not
            io.sysroot.mkdir(paths["cm_port"], parents=True)
        if "roce_mode" in changed:
            io.sysroot.write(paths["cm_port"] + "/default_roce_mode", want["roce_mode"] + "\n")
            done.append(f"default_roce_mode={want['roce_mode']}")
        if "roce_tos" in changed:
            io.sysroot.write(paths["cm_port"] + "/default_roce_tos", f"{want['roce_tos']}\n")
            done.append(f"default_roce_tos={want['roce_tos']}")


def run_plan_interfaces(
    interfaces: List[Dict[str, Any]], backend_req: str, io: Host, check_mode: bool
) -> Dict[str, Any]:
    """Read -> diff -> (apply) -> read back, for every interface of a plan."""
    backend = choose_backend(backend_req, io, _driver(interfaces[0]) if interfaces else None)
    results = []
    changed_any = False
    warnings = []  # type: List[str]
    for iface in interfaces:
        before, raw, warns = read_state(iface, backend, io)
        warnings.extend(warns)
        want = desired_state(iface, before)
        changed = diff_keys(before, want)
        done = []  # type: List[str]
        after = before
        if changed and not check_mode:
            try:
                apply_changes(iface, backend, changed, want, raw, io, done)
                after, _raw, _w = read_state(iface, backend, io)
                left = diff_keys(after, want)
                if left:
                    still = "; ".join(f"{k}={after.get(k)!r} (want {want[k]!r})" for k in left)
                    raise QosError(f"{iface['netdev']}: after applying, still different: {still}")
            except ENGINE_ERRORS as exc:
                raise _partial(exc, iface, backend, io, before, changed, done, results, warnings) from exc
        elif changed:
            after = dict(before)
            after.update({k: want[k] for k in changed})
        changed_any = changed_any or bool(changed)
        results.append(
            {
                "netdev": iface["netdev"],
                "rdma_device": iface.get("rdma_device"),
                "rail": iface.get("rail"),
                "role": iface.get("role"),
                "changed_keys": changed,
                "actions": done,
                "before": before,
                "after": after,
                "roce_active_mtu": roce_active_mtu(after.get("mtu") or 0),
            }
        )
    return {"backend": backend, "changed": changed_any, "interfaces": results, "warnings": warnings}


def _partial(
    exc: BaseException,
    iface: Dict[str, Any],
    backend: str,
    io: Host,
    before: Dict[str, Any],
    changed: List[str],
    done: List[str],
    results: List[Dict[str, Any]],
    warnings: List[str],
) -> PartialApply:
    """The run's result up to a failure while applying ``iface``, as a PartialApply."""
    try:
        after, _raw, _w = read_state(iface, backend, io)  # what the NIC holds now
    except ENGINE_ERRORS:
        after = {}
    failing = {
        "netdev": iface["netdev"],
        "rdma_device": iface.get("rdma_device"),
        "rail": iface.get("rail"),
        "role": iface.get("role"),
        "changed_keys": changed,
        "actions": list(done),
        "before": before,
        "after": after,
        "roce_active_mtu": roce_active_mtu(after.get("mtu") or 0),
        "failed": True,
        "error": str(exc),
    }
    interfaces = [*results, failing]
    applied = any(i["actions"] for i in interfaces)
    partly = [i["netdev"] for i in results if i["actions"]]
    message = (
        f"{iface['netdev']}: applying the QoS plan failed after {len(done)} of its step(s) "
        f"({'; '.join(done) or 'none'}): {exc}. "
        + (
            f"Fully applied before it: {', '.join(partly)}. "
            if partly
            else "No other interface was changed before it. "
        )
        + "Interfaces after it were not touched."
    )
    return PartialApply(
        message, {"backend": backend, "changed": applied, "interfaces": interfaces, "warnings": warnings}
    )


def drift_lines(result: Dict[str, Any]) -> List[str]:
    """Human-readable drift from a run result, for the boot-time log."""
    lines = []
    for iface in result.get("interfaces") or []:
        for key in iface["changed_keys"]:
            lines.append(f"drift {iface['netdev']} {key}: {iface['before'].get(key)!r} -> {iface['after'].get(key)!r}")
    return lines
