# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVMe over Fabrics (RDMA or TCP): nvme-cli connections of the planned subsystems, and
kubernetes-csi/csi-driver-nvmf.

Sources: the NVMe Base Specification ("NVMe Qualified Names", DH-HMAC-CHAP "Secret
representation"); nvme-cli Documentation/nvme-connect.txt and nvme-discover.txt (RDMA port 4420);
kubernetes-csi/csi-driver-nvmf deploy/kubernetes/*.yaml and examples/kubernetes/fs-example/pv.yaml
(driver csi.nvmf.com, static volumes only; no published image or chart). Pure Python (>= 3.8).
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import StorageBackend, unique

# NVMe Base Specification, "NVMe Qualified Names": nqn.YYYY-MM.reverse-domain:owner-string, or the
# UUID form nqn.2014-08.org.nvmexpress:uuid:UUID; at most 223 bytes (UTF-8). The discovery NQN
# (nqn.2014-08.org.nvmexpress.discovery) names a discovery controller, never a subsystem to plan.
NQN_RE = re.compile(r"^nqn\.[0-9]{4}-(0[1-9]|1[0-2])\.[a-z0-9][-a-z0-9]*(\.[a-z0-9][-a-z0-9]*)+:[^\s,;=]+$")
NQN_UUID_RE = re.compile(r"^nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
NQN_MAX_BYTES = 223
# DH-HMAC-CHAP secrets in the NVMe Base Specification's representation ("Secret representation";
# what nvme-cli gen-dhchap-key prints): DHHC-1:HH:BASE64: where HH is the hash the secret is
# transformed with (00 none, 01 SHA-256, 02 SHA-384, 03 SHA-512) and BASE64 is the 32, 48 or 64
# byte secret followed by its CRC-32, little-endian (the kernel checks it: nvme_auth_extract_key).
DHCHAP_RE = re.compile(r"^DHHC-1:(0[0-3]):([A-Za-z0-9+/]+={0,2}):$")
DHCHAP_LENGTHS = {"00": (32, 48, 64), "01": (32,), "02": (48,), "03": (64,)}
DHCHAP_KEYS = ("dhchap_secret", "dhchap_ctrl_secret")
# NVMe-oF files of storage_client: the connections it makes (now and at boot, by
# gpufabric-nvmeof-connect) and the DH-HMAC-CHAP secrets, root only.
NVME_DIR = "/etc/nvme/gpufabric"
NVME_CONF = f"{NVME_DIR}/connect.conf"
NVMF_PLUGIN_IMAGE = "nvmfplugin:latest"  # what deploy/kubernetes/csi-nvmf-*.yaml reference; built by the user


def nqn_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not the NQN of an NVMe subsystem, or None."""
    text = str(value)
    if len(text.encode("utf-8")) > NQN_MAX_BYTES:
        return f"is longer than {NQN_MAX_BYTES} bytes"
    if not (NQN_UUID_RE.fullmatch(text) or NQN_RE.fullmatch(text)):
        return (
            "is not an NVMe qualified name; allowed: nqn.YYYY-MM.reverse.domain:name (no spaces, commas, ';' or "
            "'='), or nqn.2014-08.org.nvmexpress:uuid:UUID"
        )
    return None


def dhchap_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not a DH-HMAC-CHAP secret, or None; never repeats the value."""
    match = DHCHAP_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return "is not a DH-HMAC-CHAP secret; allowed: DHHC-1:00:BASE64: (00-03), as nvme gen-dhchap-key prints it"
    try:
        raw = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return "is not a DH-HMAC-CHAP secret: its key part is not base64"
    key, crc = raw[:-4], raw[-4:]
    if len(key) not in DHCHAP_LENGTHS[match.group(1)]:
        sizes = " or ".join(str(n) for n in DHCHAP_LENGTHS[match.group(1)])
        return f"is not a DH-HMAC-CHAP secret: hash {match.group(1)} needs a {sizes} byte key, it has {len(key)}"
    if zlib.crc32(key) != int.from_bytes(crc, "little"):
        return "is not a DH-HMAC-CHAP secret: its CRC-32 does not match (a character was changed or lost)"
    return None


def public(nvmeof: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The NVMe-oF settings without the DH-HMAC-CHAP secrets (the record is stored and compared)."""
    return {k: v for k, v in (nvmeof or {}).items() if k not in DHCHAP_KEYS}


def dhchap_files(name: str, nvmeof: Mapping[str, Any]) -> Dict[str, Optional[str]]:
    """Where storage_client keeps each secret the entry gives (0600, root); None for one it does not give."""
    return {key: (f"{NVME_DIR}/{name}.{key.replace('_', '-')}" if nvmeof.get(key) else None) for key in DHCHAP_KEYS}


def nvme_conf(connections: List[Mapping[str, Any]]) -> str:
    """The connections file gpufabric-nvmeof-connect reads: one path per line, '-' for none:
    NQN TRANSPORT TRADDR TRSVCID HOST_TRADDR HOST_SECRET_FILE CTRL_SECRET_FILE."""
    lines = ["# Managed by Ansible (gpufabric.rollout storage_client): the planned NVMe-oF paths, nothing else."]
    for c in connections:
        fields = [c["nqn"], c["transport"], c["traddr"], c["trsvcid"], c.get("host_traddr")]
        fields += [c["dhchap_files"].get(key) for key in DHCHAP_KEYS]
        lines.append(" ".join(str(f) if f else "-" for f in fields))
    return "\n".join(lines) + "\n"


class Nvmeof(StorageBackend):
    name = "nvmeof"
    default_pods = "static_pv"
    dynamic = False
    ports = {"rdma": 4420, "tcp": 4420}
    gdscheck_labels = ("NVMeOF",)  # a block device: no cuFile fs section
    modules = {"rdma": ("nvme-fabrics", "nvme-rdma"), "tcp": ("nvme-fabrics", "nvme-tcp")}
    doca_component = ("nvmf", "mlnx-nvme")
    export_what = "the subsystem NQN"
    ipv4_servers = True
    host_mount = False
    record_key = "nvmeof"
    node_key = "nvme"
    csi_driver = "csi.nvmf.com"
    csi_rank = 4
    csi_install = "manifest"
    csi_manifest_what = "the driver's deploy/kubernetes directory (kubernetes-csi/csi-driver-nvmf at a pinned commit)"

    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        return None if 1 <= len(servers) <= 8 else f"needs 1-8 discovery controllers; got {show(servers)}"

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        why = nqn_problem(export)
        return f"{show(export)} {why} ({label})" if why else None

    def auth_rules(self, fs: Mapping[str, Any], p: str, label: str, problems: List[str]) -> None:
        nvmeof = fs.get("nvmeof") or {}
        for key in DHCHAP_KEYS:
            secret = nvmeof.get(key)
            if secret in (None, ""):
                continue
            why = dhchap_problem(secret)
            if why:
                problems.append(f"{p}.nvmeof.{key}: the value given (not shown) {why} ({label})")
        if nvmeof.get("dhchap_ctrl_secret") and not nvmeof.get("dhchap_secret"):
            problems.append(
                f"{p}.nvmeof.dhchap_ctrl_secret: needs nvmeof.dhchap_secret as well (the controller is authenticated "
                f"only within a host authentication) ({label})"
            )

    def pods_rules(
        self, fs: Mapping[str, Any], p: str, label: str, pods: Optional[str], servers: List[Any], problems: List[str]
    ) -> None:
        if pods == "static_pv" and not (fs.get("nvmeof") or {}).get("device_id"):
            problems.append(
                f"{p}.nvmeof.device_id: is required for pods static_pv ({label}): the namespace the PV stands for, "
                "as uuid.UUID or eui.EUI"
            )

    def node_entry(
        self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int], mount: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        return {
            "nvmeof": {
                "nqn": fs["export"],
                "dhchap_files": dhchap_files(fs["name"], fs.get("nvmeof") or {}),
                "transport": fs["transport"],
                "trsvcid": port,
                "paths": [
                    {"traddr": server, "host_traddr": nic.get("ipv4"), "netdev": nic["netdev"]}
                    for server in fs["servers"]
                    for nic in (nics or [{"netdev": None, "ipv4": None}])
                ],
                "multipath": bool((fs.get("nvmeof") or {}).get("multipath", True)),
            }
        }

    def record_part(self, fs: Mapping[str, Any], mount: Optional[Mapping[str, Any]]) -> Any:
        return public(fs.get("nvmeof"))

    def node_wide(
        self, filesystems: List[Dict[str, Any]], fabric: Mapping[str, Any], problems: List[str]
    ) -> Optional[Dict[str, Any]]:
        if not filesystems:
            return None
        if len({fs["nvmeof"]["multipath"] for fs in filesystems}) > 1:
            problems.append(
                "gpufabric_storage: nvmeof.multipath differs between the NVMe-oF filesystems "
                f"({', '.join(fs['name'] for fs in filesystems)}); nvme_core multipath is one setting per node"
            )
        # Each planned path is one `nvme connect` of the planned NQN (never connect-all, which attaches every
        # subsystem a discovery controller offers this host).
        connections = unique(
            [
                {
                    "name": fs["name"],
                    "nqn": fs["nvmeof"]["nqn"],
                    "transport": fs["transport"],
                    "traddr": path["traddr"],
                    "trsvcid": str(fs["nvmeof"]["trsvcid"]),
                    "host_traddr": path.get("host_traddr"),
                    "dhchap_files": fs["nvmeof"]["dhchap_files"],
                }
                for fs in filesystems
                for path in fs["nvmeof"]["paths"]
            ]
        )
        files = [(fs["name"], key, path) for fs in filesystems for key, path in fs["nvmeof"]["dhchap_files"].items()]
        return {
            "connections": connections,
            "conf": nvme_conf(connections),
            "conf_path": NVME_CONF,
            "dir": NVME_DIR,
            "secret_files": [{"name": name, "key": key, "path": path} for name, key, path in files if path],
            # A secret no longer given: its file goes.
            "secret_files_absent": [
                f"{NVME_DIR}/{name}.{key.replace('_', '-')}" for name, key, path in files if not path
            ],
            "multipath": bool(filesystems[0]["nvmeof"]["multipath"]),
        }

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        csi["volumeHandle"] = f"gpufabric-{fs['name']}"
        csi["volumeAttributes"] = {
            "targetTrAddr": ",".join(fs["servers"]),
            "targetTrPort": str(fs["port"]),
            "targetTrType": fs["transport"],
            "nqn": fs["export"],
            "deviceID": str((fs.get("nvmeof") or {}).get("device_id")),
        }
        return ["ReadWriteOnce"], []

    def install_images(self, config: Mapping[str, Any], var: str, problems: List[str]) -> Dict[str, str]:
        if not config.get("image"):
            problems.append(
                f"{var}.image: is required: kubernetes-csi/csi-driver-nvmf publishes no image; build it "
                "(make container) and push it to a registry the nodes pull from"
            )
        return {NVMF_PLUGIN_IMAGE: str(config.get("image") or NVMF_PLUGIN_IMAGE)}

    def readback(
        self, fs: Mapping[str, Any], section: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]
    ) -> None:
        plan = fs["nvmeof"]
        controllers = (observed.get("nvme") or {}).get("controllers") or []
        ctrls = [c for c in controllers if c.get("subsysnqn") == plan["nqn"]]
        if not ctrls:
            problems.append(f"no NVMe-oF controller of subsystem {plan['nqn']} is connected")
            return
        for path in plan["paths"]:
            match = [
                c
                for c in ctrls
                if c["address"].get("traddr") == path["traddr"]
                and str(c["address"].get("trsvcid")) == str(plan["trsvcid"])
                and (not path.get("host_traddr") or c["address"].get("host_traddr") == path["host_traddr"])
            ]
            where = f"{path['traddr']}:{plan['trsvcid']} from {path.get('host_traddr') or 'any address'}"
            if not match:
                problems.append(f"no controller of {plan['nqn']} on {where}")
            elif match[0].get("transport") != plan["transport"]:
                got = match[0].get("transport")
                problems.append(f"the controller on {where} uses transport {got}, planned {plan['transport']}")
            elif match[0].get("state") != "live":
                problems.append(f"the controller on {where} is {match[0].get('state')}, not live")
        want = "Y" if plan["multipath"] else "N"
        got = ((observed.get("modules") or {}).get("nvme_core") or {}).get("params", {}).get("multipath")
        if got is not None and got != want:
            problems.append(
                f"nvme_core multipath is {got}, planned {want} (a load-time parameter: it takes effect at the next "
                "boot)"
            )


BACKEND = Nvmeof()
