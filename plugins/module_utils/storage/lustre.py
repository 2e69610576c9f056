# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lustre: the Lustre client over LNet (o2ib or tcp), and HewlettPackard/lustre-csi-driver.

Sources: the Lustre manual ("Mounting a Lustre client", "LNet configuration");
lnet/utils/lnetconfig/liblnetconfig.c (LNet network names, the lnetctl YAML layout);
HewlettPackard/lustre-csi-driver v0.1.11 charts/lustre-csi-driver (driver lustre-csi.hpe.com,
static volumes only; volumeHandle is the MGS NIDs and the filesystem). Pure Python (>= 3.8).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import StorageBackend, mirrored, unique


def lnet_conf(networks: List[Mapping[str, Any]]) -> str:
    """/etc/lnet.conf for ``lnetctl import`` (the layout of ``lnetctl export --backup``): one NI per interface."""
    lines = ["net:"]
    for net in networks:
        lines.append(f"    - net type: {net['net']}")
        lines.append("      local NI(s):")
        for netdev in net["interfaces"]:
            lines.append("        - interfaces:")
            lines.append(f"              0: {netdev}")
    return "\n".join(lines) + "\n"


class Lustre(StorageBackend):
    name = "lustre"
    default_pods = "static_pv"
    dynamic = False
    fstype = "lustre"
    cufile_section = "lustre"
    gdscheck_labels = ("Lustre", "DDN EXAScaler")  # "DDN EXAScaler" before
    modules = {"rdma": ("lnet", "ko2iblnd"), "tcp": ("lnet", "ksocklnd")}
    export_what = "the filesystem name"
    ipv4_servers = True
    client_source = ("storage_client_lustre_repo_url", "the Debian repository of the Lustre client packages")
    client_key_var = "storage_client_lustre_repo_key_fingerprints"
    record_key = "lustre"
    node_key = "lnet"
    csi_driver = "lustre-csi.hpe.com"
    csi_rank = 1
    csi_chart_hint = (
        " (HewlettPackard/lustre-csi-driver publishes its chart only in its repository: check out tag v0.1.11 "
        "and give charts/lustre-csi-driver)"
    )

    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        if 1 <= len(servers) <= 2:
            return None
        return f"needs one MGS address, or two for a failover pair; got {show(servers)}"

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        if not re.fullmatch(r"^[A-Za-z0-9_-]{1,8}$", str(export)):
            return f"{show(export)} is not a Lustre filesystem name (1-8 letters, digits, '_' or '-') ({label})"
        return None

    def option_rules(self, fs: Mapping[str, Any], p: str, label: str, transport: str, problems: List[str]) -> None:
        lnet = (fs.get("lustre") or {}).get("lnet_network")
        if lnet is None:
            return
        kind = "o2ib" if transport == "rdma" else "tcp"
        if not re.fullmatch(rf"^{kind}[0-9]{{0,4}}$", str(lnet)):
            problems.append(
                f"{p}.lustre.lnet_network: {show(lnet)} is not an LNet {kind} network (like {kind} or {kind}1) for "
                f"transport {transport} ({label})"
            )

    def mount(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
        net = str((fs.get("lustre") or {}).get("lnet_network") or ("o2ib" if fs["transport"] == "rdma" else "tcp"))
        nids = [f"{server}@{net}" for server in fs["servers"]]
        return {
            "src": ":".join(nids) + f":/{fs['export']}",
            "fstype": self.fstype,
            "options": [],
            "host_options": ["_netdev", "x-systemd.requires=lnet.service", "x-systemd.after=lnet.service"],
            "expect_fstype": self.fstype,
            "expect_options": {},
            "nids": nids,
            "lnet_network": net,
        }

    def node_entry(
        self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int], mount: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        return {"lustre": {"network": mount["lnet_network"], "nids": mount["nids"]}} if mount else {}

    def record_part(self, fs: Mapping[str, Any], mount: Optional[Mapping[str, Any]]) -> Any:
        return {"nids": list((mount or {}).get("nids") or [])}

    def node_wide(
        self, filesystems: List[Dict[str, Any]], fabric: Mapping[str, Any], problems: List[str]
    ) -> Optional[Dict[str, Any]]:
        """LNet: one network per lnet_network, one NI per NIC that serves a Lustre filesystem on it."""
        lnet_nets: Dict[str, List[str]] = {}
        for fs in filesystems:
            net = fs["lustre"]["network"]
            lnet_nets.setdefault(net, [])
            lnet_nets[net] = unique(lnet_nets[net] + [n["netdev"] for n in fs["nics"]])
        if not lnet_nets:
            return None
        networks = [{"net": net, "interfaces": ifs} for net, ifs in lnet_nets.items()]
        by_netdev = {n["netdev"]: n for fs in filesystems for n in fs["nics"]}
        for net in networks:
            net["nids"] = [
                f"{by_netdev[i]['ipv4']}@{net['net']}" for i in net["interfaces"] if by_netdev[i].get("ipv4")
            ]
        return {
            "networks": networks,
            "conf": lnet_conf(networks),
            # ko2iblnd's tos: the RoCE ToS of its RDMA-CM connections, the fabric's lossless class
            "o2ib_tos": int(fabric["roce_tos"]) if any(n["net"].startswith("o2ib") for n in networks) else None,
        }

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        csi["volumeHandle"] = ":".join(fs["lustre"]["nids"]) + f":/{fs['export']}"
        csi["fsType"] = "lustre"
        return ["ReadWriteMany"], list(fs["mount_options"])

    def helm_values(self, registry: str) -> Dict[str, Any]:
        image = mirrored("ghcr.io/hewlettpackard/lustre-csi-driver", registry)
        return {"deployment": {"image": image, "tag": "0.1.11"}}

    def readback(
        self, fs: Mapping[str, Any], section: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]
    ) -> None:
        nis = observed.get("lnet")
        if nis is None:
            problems.append("LNet is not configured (lnetctl net show found no networks)")
            return
        up = {ni["nid"] for ni in nis if ni.get("status") == "up"}
        network = (fs.get("lustre") or {}).get("network", "o2ib")
        for nic in fs["nics"]:
            nid = f"{nic.get('ipv4')}@{network}"
            if nid not in up:
                problems.append(f"LNet has no NI {nid} up on {nic['netdev']}")
        for nid in (fs.get("lustre") or {}).get("nids") or []:
            if not nid.endswith(f"@{network}"):
                problems.append(f"the MGS NID {nid} is not on LNet network {network}")


BACKEND = Lustre()
