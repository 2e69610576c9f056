# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the node's storage back and hold it against the plan (storage_client's proof).

Parsers of what the kernel and the clients' tools show, and ``check(section, observed)``, which
names, per filesystem, every way the node differs from the plan:
  /proc/mounts        proc(5) / fstab(5) fields, octal escapes; NFS options as the kernel shows
                      them (fs/nfs/super.c nfs_show_mount_options: proto=rdma, port=, vers=, nconnect=)
  lnetctl net show    the "net:" / "- net type:" / "local NI(s):" / "- nid:" layout
                      (lnet/utils/lnetconfig/liblnetconfig.c; lustre/tests/sanity-lnet.sh)
  NVMe sysfs          /sys/class/nvme/nvmeN/{transport,address,state,subsysnqn}; address is
                      "traddr=A,trsvcid=S,host_traddr=H" (drivers/nvme/host/fabrics.c nvmf_get_address)
  mmlsconfig          "Attribute value [node,...]" lines (IBM Storage Scale mmlsconfig)
  mmgetstate          the node / GPFS state table
  gdscheck -p         the per-filesystem support _gdscheck.filesystem_support() returns
Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY, backend

_ESCAPE = re.compile(r"\\([0-7]{3})")
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def options_of(text: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for opt in text.split(","):
        key, _sep, value = opt.partition("=")
        if key:
            out[key] = value
    return out


def parse_mounts(text: str) -> List[Dict[str, Any]]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        mounts.append(
            {
                "source": _unescape(fields[0]),
                "target": _unescape(fields[1]),
                "fstype": fields[2],
                "options": options_of(fields[3]),
                "option_list": [o for o in fields[3].split(",") if o],
            }
        )
    return mounts


def parse_lnet_show(text: str) -> List[Dict[str, Any]]:
    """[{net, nid, status, interfaces}] from ``lnetctl net show``."""
    nis: List[Dict[str, Any]] = []
    net = None
    current: Optional[Dict[str, Any]] = None
    in_ifs = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        body = line[2:].strip() if line.startswith("- ") else line
        if body.startswith("net type:"):
            net = body.split(":", 1)[1].strip()
            in_ifs = False
        elif body.startswith("nid:"):
            current = {"net": net, "nid": body.split(":", 1)[1].strip(), "status": None, "interfaces": []}
            nis.append(current)
            in_ifs = False
        elif body.startswith("status:") and current is not None:
            current["status"] = body.split(":", 1)[1].strip()
        elif body.startswith("interfaces:"):
            in_ifs = True
        elif in_ifs and current is not None and re.match(r"^\d+:\s*\S+$", body):
            current["interfaces"].append(body.split(":", 1)[1].strip())
        else:
            in_ifs = False
    return nis


def parse_nvme_address(text: str) -> Dict[str, str]:
    pairs = (part.partition("=") for part in text.strip().split(","))
    return {key: value for key, _sep, value in pairs if key}


def parse_mmlsconfig(text: str, node: str) -> Dict[str, str]:
    """Attribute values for ``node`` from mmlsconfig: the whole configuration (``[node,...]`` sections after the
    common values, ``[common]`` back to them) or chosen attributes ("attr value [n1,n2]"); node values win."""
    common: Dict[str, str] = {}
    mine: Dict[str, str] = {}
    section: Optional[List[str]] = None  # the nodes of the current [section]; None: common
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.endswith(":") or line.startswith("-"):
            continue
        if line.startswith("[") and line.endswith("]"):
            names = [n.strip() for n in line[1:-1].split(",")]
            section = None if names == ["common"] else names
            continue
        match = re.match(r"^(\S+)\s+(.*?)(?:\s+\[([^\]]*)\])?$", line)
        if not match:
            continue
        key, value, nodes = match.groups()
        targets = [n.strip() for n in nodes.split(",")] if nodes is not None else section
        if targets is None:
            common[key] = value
        elif node in targets:
            mine[key] = value
    return {**common, **mine}


def parse_mmgetstate(text: str, node: str) -> Optional[str]:
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and fields[1] == node:
            return fields[2]
    return None


# --------------------------------------------------------------------------------------------- check
def _mount_at(observed: Mapping[str, Any], target: str) -> Optional[Mapping[str, Any]]:
    found = None
    for mount in observed.get("mounts") or []:
        if mount["target"].rstrip("/") == target.rstrip("/"):
            found = mount  # the last one is on top
    return found


def _check_mount(fs: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]) -> None:
    plan = fs["mount"]
    mount = _mount_at(observed, fs["mount_point"])
    if mount is None:
        problems.append(f"{fs['mount_point']} is not mounted")
        return
    if mount["fstype"] != plan["expect_fstype"]:
        problems.append(f"{fs['mount_point']} is {mount['fstype']}, planned {plan['expect_fstype']}")
        return
    if mount["source"] != plan["src"]:
        problems.append(f"{fs['mount_point']} is mounted from {mount['source']}, planned {plan['src']}")
    for key, want in (plan.get("expect_options") or {}).items():
        got = mount["options"].get(key)
        if got != want:
            shown = got if got is not None else "(none)"
            problems.append(f"{fs['mount_point']} has {key}={shown}, planned {key}={want}")
    # nosuid / nodev are per-mount flags the kernel shows first (proc(5), /proc/mounts "options").
    for flag in plan.get("security_options") or []:
        if flag not in (mount.get("option_list") or []):
            problems.append(f"{fs['mount_point']} is mounted without {flag}, planned {flag}")
    backend(fs["backend"]).check_mount(fs, mount, problems)


def _check_nvmeof(fs: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]) -> None:
    REGISTRY["nvmeof"].readback(fs, {}, observed, problems)


def _check_gds(fs: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]) -> None:
    if not fs.get("gds"):
        return
    gdscheck = observed.get("gdscheck")
    if gdscheck is None:  # not asked for
        return
    support = (gdscheck.get("filesystems") or {}).get(fs["backend"])
    if not support:
        problems.append("GDS is planned but gdscheck -p prints no line for this filesystem type")
    elif not support.get("supported"):
        shown = ", ".join(support.get("modes") or []) or "Unsupported"
        problems.append(f"GDS is planned but gdscheck -p reports {support['label']} : {shown}")


def check(section: Mapping[str, Any], observed: Mapping[str, Any]) -> Dict[str, Any]:
    """{"filesystems": {name: {backend, ok, problems}}, "node": [problems], "problems": [all, each naming its
    filesystem], "ok": bool}."""
    result: Dict[str, Any] = {"filesystems": {}, "node": []}
    modules = observed.get("modules") or {}
    for name in section.get("modules") or []:
        if not (modules.get(name.replace("-", "_")) or {}).get("loaded"):
            result["node"].append(f"kernel module {name} is not loaded")
    lnet = section.get("lnet") or {}
    tos = lnet.get("o2ib_tos")
    got = ((modules.get("ko2iblnd") or {}).get("params") or {}).get("tos")
    if tos is not None and got is not None and str(got) != str(tos):
        result["node"].append(
            f"ko2iblnd tos is {got}, planned {tos} (a load-time parameter: restart LNet while no Lustre filesystem "
            "is mounted, or reboot)"
        )
    for fs in section.get("filesystems") or []:
        problems: List[str] = []
        if fs.get("mount"):
            _check_mount(fs, observed, problems)
        backend(fs["backend"]).readback(fs, section, observed, problems)
        _check_gds(fs, observed, problems)
        result["filesystems"][fs["name"]] = {"backend": fs["backend"], "ok": not problems, "problems": problems}
    result["warnings"] = unplanned_nvme(section, observed)
    result["problems"] = [f"node: {p}" for p in result["node"]] + [
        f"filesystem {name!r} ({item['backend']}): {p}"
        for name, item in result["filesystems"].items()
        for p in item["problems"]
    ]
    result["ok"] = not result["problems"]
    return result


# --------------------------------------------------------------------------------------------- what to do
def lnet_missing(section: Mapping[str, Any], observed: Mapping[str, Any]) -> List[Dict[str, str]]:
    """The planned LNet NIs that are not up: [{net, interface, nid}] (each is one ``lnetctl net add``)."""
    up = {ni["nid"] for ni in observed.get("lnet") or [] if ni.get("status") == "up"}
    out = []
    for net in (section.get("lnet") or {}).get("networks") or []:
        by_netdev = {n["netdev"]: n for fs in section.get("filesystems") or [] for n in fs.get("nics") or []}
        for interface in net["interfaces"]:
            nid = f"{(by_netdev.get(interface) or {}).get('ipv4')}@{net['net']}"
            if nid not in up:
                out.append({"net": net["net"], "interface": interface, "nid": nid})
    return out


def unplanned_nvme(section: Mapping[str, Any], observed: Mapping[str, Any]) -> List[str]:
    """NVMe-oF subsystems connected on this node that no filesystem plans. They are reported and left connected:
    disconnecting one could take a namespace from a running workload (nvme disconnect -n NQN does it)."""
    planned = {fs["nvmeof"]["nqn"] for fs in section.get("filesystems") or [] if fs.get("nvmeof")}
    found: Dict[str, List[str]] = {}
    for ctrl in (observed.get("nvme") or {}).get("controllers") or []:
        nqn = ctrl.get("subsysnqn")
        if ctrl.get("transport") in (None, "", "pcie") or not nqn or nqn in planned or nqn == DISCOVERY_NQN:
            continue
        found.setdefault(nqn, []).append(str(ctrl.get("name") or "?"))
    return [
        f"NVMe-oF subsystem {nqn} is connected ({', '.join(names)}) but not planned; left connected (disconnecting "
        "could take a namespace from a running workload): nvme disconnect -n NQN removes it"
        for nqn, names in sorted(found.items())
    ]


def nvme_missing(section: Mapping[str, Any], observed: Mapping[str, Any]) -> List[str]:
    """Names of the NVMe-oF filesystems with a planned path that is not connected and live."""
    out = []
    for fs in section.get("filesystems") or []:
        if fs["backend"] == "nvmeof":
            problems: List[str] = []
            _check_nvmeof(fs, {**observed, "modules": {}}, problems)
            if [p for p in problems if not p.startswith("nvme_core")]:
                out.append(fs["name"])
    return out


def gpfs_unmounted(section: Mapping[str, Any], observed: Mapping[str, Any]) -> List[str]:
    """The Storage Scale devices planned on this node that are not mounted."""
    mounted = {m["source"] for m in observed.get("mounts") or [] if m["fstype"] == REGISTRY["gpfs"].fstype}
    return [d for d in ((section.get("gpfs") or {}).get("devices") or []) if d not in mounted]


def gpfs_changes(section: Mapping[str, Any], config: Mapping[str, str]) -> Dict[str, str]:
    """mmchconfig settings that differ from the node's configuration (autoload yes: the daemon starts at boot)."""
    plan = section.get("gpfs") or {}
    wanted = {
        "verbsRdma": plan.get("verbs_rdma"),
        "verbsRdmaCm": plan.get("verbs_rdma_cm"),
        "verbsPorts": plan.get("verbs_ports"),
        "verbsGPUDirectStorage": plan.get("verbs_gpudirect_storage"),
        "autoload": "yes",
    }
    return {k: v for k, v in wanted.items() if v and (config or {}).get(k) != v}
