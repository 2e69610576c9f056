# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE QoS apply engine: read -> diff -> apply -> read back, per interface of a plan.

Runs the tools (``mlnx_qos`` or iproute2 ``dcb``, ``ethtool``) through one ``Runner`` and reads
and writes sysfs/configfs/debugfs through one ``Sysroot`` (``_host.py``), so the same code runs
in the ``roce_qos`` module, in the boot-time re-apply script (``roles/roce/files/roce_apply.py``,
which carries this file and the module_utils it imports onto the host) and in tests with fakes.

Errors: ``QosError`` (a setting cannot be applied or read back), ``CommandError`` (a tool
failed), ``ParseError`` (a tool printed something unreadable; named after the tool call and its
netdev). ``ENGINE_ERRORS`` lists them, with OSError, for callers that report any of them.

Pure Python (>= 3.8), stdlib only, no AnsibleModule.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import (
    parse_dcb_app,
    parse_dcb_buffer,
    parse_dcb_ets,
    parse_dcb_pfc,
    parse_ethtool_pause,
    parse_mlnx_qos,
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


def _query(io: Host, parser: Callable[[str], Dict[str, Any]], argv: List[str]) -> Dict[str, Any]:
    """Run a read-only tool call and parse its output; a ParseError names the call (tool and netdev)."""
    out = io.runner.check(argv)
    try:
        return parser(out)
    except ParseError as exc:
        raise exc.within(" ".join(argv)) from None


def choose_backend(requested: str, io: Host) -> str:
    if requested in ("mlnx_qos", "dcb"):
        if not io.runner.which(requested):
            raise QosError(f"backend {requested} requested but the {requested} command is not installed")
        return requested
    if io.runner.which("mlnx_qos"):
        return "mlnx_qos"
    if io.runner.which("dcb"):
        return "dcb"
    raise QosError("neither mlnx_qos (MOFED/DOCA mlnx-tools) nor dcb (iproute2) is installed")


def _read_int(io: Host, rel: str) -> Optional[int]:
    words = (io.sysroot.read(rel) or "").split()
    return integer_or_none(words[0]) if words else None


def _sysfs_paths(iface: Dict[str, Any]) -> Dict[str, str]:
    nd = iface["netdev"]
    dev = iface.get("rdma_device") or ""
    port = iface.get("port", 1)
    return {
        "ecn": f"sys/class/net/{nd}/ecn",
        "mtu": f"sys/class/net/{nd}/mtu",
        "tc": f"sys/class/infiniband/{dev}/tc/1/traffic_class",
        "cm_dev": f"sys/kernel/config/rdma_cm/{dev}",
        "cm_port": f"sys/kernel/config/rdma_cm/{dev}/ports/{port}",
    }


def read_state(iface: Dict[str, Any], backend: str, io: Host) -> Tuple[Dict[str, Any], Dict[str, Any], List[str]]:
    """Current values of every key the plan manages (None = not readable here).

    Returns (state, raw, warnings); raw keeps the full tool state for apply."""
    nd = iface["netdev"]
    warnings = []  # type: List[str]
    if backend == "mlnx_qos":
        raw = _query(io, parse_mlnx_qos, ["mlnx_qos", "-i", nd, "-a"])
        raw["delay"] = raw.get("cable_len")
    else:
        raw = {}
        raw.update(_query(io, parse_dcb_app, ["dcb", "-N", "app", "show", "dev", nd]))
        raw.update(_query(io, parse_dcb_pfc, ["dcb", "pfc", "show", "dev", nd]))
        raw["cable_len"] = raw.get("delay")
        if iface.get("ets"):
            raw.update(_query(io, parse_dcb_ets, ["dcb", "ets", "show", "dev", nd]))
        if iface.get("buffer_size") or iface.get("prio2buffer"):
            raw.update(_query(io, parse_dcb_buffer, ["dcb", "buffer", "show", "dev", nd]))
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

    paths = _sysfs_paths(iface)
    ecn = iface.get("ecn") or {}
    if io.sysroot.exists(paths["ecn"]):
        state["ecn"] = {}
        for point in ("roce_np", "roce_rp"):
            for prio in ecn.get("priorities") or []:
                state["ecn"][f"{point}/{prio}"] = _read_int(io, f"{paths['ecn']}/{point}/enable/{prio}")
        state["cnp_dscp"] = _read_int(io, paths["ecn"] + "/roce_np/cnp_dscp")
        state["cnp_prio"] = _read_int(io, paths["ecn"] + "/roce_np/cnp_802p_prio")
    else:
        dbg = _debugfs_cc(iface, io)
        if dbg:
            state["cnp_dscp"] = _read_int(io, dbg + "/np_cnp_dscp")
            state["cnp_prio"] = _read_int(io, dbg + "/np_cnp_prio")
        warnings.append(
            f"{nd}: no per-priority ECN sysfs (inbox driver); congestion control priorities follow the "
            "firmware setting ROCE_CC_PRIO_MASK (mlxconfig)"
        )
        if not dbg:
            warnings.append(f"{nd}: CNP DSCP/priority not exposed (no MOFED ecn sysfs, no mlx5 debugfs cc_params)")

    if iface.get("rdma_device"):
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
    state["mtu"] = _read_int(io, paths["mtu"])
    if iface.get("global_pause_off"):
        if io.runner.which("ethtool"):
            pause = _query(io, parse_ethtool_pause, ["ethtool", "-a", nd])
            state["global_pause"] = {"rx": pause["rx"], "tx": pause["tx"]}
        else:
            warnings.append(f"{nd}: ethtool not installed; global pause not checked")
    return state, raw, warnings


def _debugfs_cc(iface: Dict[str, Any], io: Host) -> Optional[str]:
    link = f"sys/class/net/{iface['netdev']}/device"
    real = io.sysroot.real(link) if io.sysroot.isdir(link) else None
    bdf = real.rsplit("/", 1)[-1] if real else None
    rel = f"sys/kernel/debug/mlx5/{bdf}/cc_params" if bdf else None
    return rel if rel and io.sysroot.exists(rel) else None


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


def _csv(values: List[Any]) -> str:
    return ",".join(str(v) for v in values)


def _mlnx_qos_commands(nd: str, changed: List[str], want: Dict[str, Any], raw: Dict[str, Any]) -> List[List[str]]:
    cmds = []
    base = ["mlnx_qos", "-i", nd]
    if "trust" in changed:
        cmds.append([*base, "--trust", want["trust"]])
    if "dscp2prio" in changed:
        args = []
        for d in sorted(want["dscp2prio"], key=int):
            prio = want["dscp2prio"][d][0]
            for old in raw.get("dscp2prio", {}).get(int(d), []):
                if old != prio:
                    args += ["--dscp2prio", f"del,{d},{old}"]
            args += ["--dscp2prio", f"set,{d},{prio}"]
        cmds.append(base + args)
    if "pfc" in changed or "cable_len" in changed:
        # mlnx_qos sends PFC enable and delay (cable length) in one dcbnl call: passing only one
        # of them resets the other to 0, so always pass both.
        pfc = want.get("pfc", raw.get("pfc"))
        cable = want.get("cable_len", raw.get("cable_len") or 0)
        cmds.append([*base, "--pfc", _csv(pfc), "--cable_len", str(cable)])
    if "ets" in changed:
        ets = want["ets"]
        cmds.append([*base, "--prio_tc", _csv(ets["prio_tc"]), "--tsa", _csv(ets["tsa"]), "--tcbw", _csv(ets["tc_bw"])])
    if "prio2buffer" in changed:
        cmds.append([*base, "--prio2buffer", _csv(want["prio2buffer"])])
    if "buffer_size" in changed:
        cmds.append([*base, "--buffer_size", _csv(want["buffer_size"])])
    if "default_prio" in changed:
        cmds.append([*base, "--defltprio", f"set,{want['default_prio']}"])
    return cmds


def _dcb_commands(nd: str, changed: List[str], want: Dict[str, Any], raw: Dict[str, Any]) -> List[List[str]]:
    cmds = []
    if "trust" in changed and want["trust"] == "pcp":
        cmds.append(["dcb", "app", "flush", "dev", nd, "dscp-prio"])
    if "dscp2prio" in changed or ("trust" in changed and want["trust"] == "dscp"):
        pairs = [f"{d}:{want['dscp2prio'][d][0]}" for d in sorted(want["dscp2prio"], key=int)]
        cmds.append(["dcb", "app", "replace", "dev", nd, "dscp-prio", *pairs])
    if "default_prio" in changed:
        cmds.append(["dcb", "app", "replace", "dev", nd, "default-prio", str(want["default_prio"])])
    if "pfc" in changed or "cable_len" in changed:
        cmd = ["dcb", "pfc", "set", "dev", nd, "prio-pfc"]
        cmd += [f"{p}:{'on' if v else 'off'}" for p, v in enumerate(want["pfc"])]
        if "cable_len" in want:
            cmd += ["delay", str(want["cable_len"])]
        cmds.append(cmd)
    if "ets" in changed:
        ets = want["ets"]
        cmds.append(
            ["dcb", "ets", "set", "dev", nd, "prio-tc"]
            + [f"{p}:{t}" for p, t in enumerate(ets["prio_tc"])]
            + ["tc-tsa"]
            + [f"{t}:{s}" for t, s in enumerate(ets["tsa"])]
            + ["tc-bw"]
            + [f"{t}:{b}" for t, b in enumerate(ets["tc_bw"])]
        )
    if "prio2buffer" in changed or "buffer_size" in changed:
        cmd = ["dcb", "buffer", "set", "dev", nd]
        if "prio2buffer" in want:
            cmd += ["prio-buffer"] + [f"{p}:{b}" for p, b in enumerate(want["prio2buffer"])]
        if "buffer_size" in want:
            cmd += ["buffer-size"] + [f"{b}:{s}" for b, s in enumerate(want["buffer_size"])]
        cmds.append(cmd)
    return cmds


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
    builder = _mlnx_qos_commands if backend == "mlnx_qos" else _dcb_commands
    for cmd in builder(nd, changed, want, raw):
        io.runner.check(cmd)
        done.append(" ".join(cmd))
    paths = _sysfs_paths(iface)
    if "ecn" in changed:
        for key, flag in sorted(want["ecn"].items()):
            point, prio = key.split("/")
            io.sysroot.write(f"{paths['ecn']}/{point}/enable/{prio}", f"{flag}\n")
        done.append("ecn " + ",".join(f"{k}={v}" for k, v in sorted(want["ecn"].items())))
    if "cnp_dscp" in changed or "cnp_prio" in changed:
        if io.sysroot.exists(paths["ecn"]):
            io.sysroot.write(paths["ecn"] + "/roce_np/cnp_dscp", f"{want['cnp_dscp']}\n")
            io.sysroot.write(paths["ecn"] + "/roce_np/cnp_802p_prio", f"{want['cnp_prio']}\n")
        else:
            dbg = _debugfs_cc(iface, io)
            if dbg:
                io.sysroot.write(dbg + "/np_cnp_dscp", f"{want['cnp_dscp']}\n")
                io.sysroot.write(dbg + "/np_cnp_prio", f"{want['cnp_prio']}\n")
        done.append(f"cnp dscp={want['cnp_dscp']} prio={want['cnp_prio']}")
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
    if "global_pause" in changed:
        io.runner.check(["ethtool", "-A", nd, "autoneg", "off", "rx", "off", "tx", "off"])
        done.append(f"ethtool -A {nd} autoneg off rx off tx off")
    return done


def run_plan_interfaces(
    interfaces: List[Dict[str, Any]], backend_req: str, io: Host, check_mode: bool
) -> Dict[str, Any]:
    """Read -> diff -> (apply) -> read back, for every interface of a plan."""
    backend = choose_backend(backend_req, io)
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
