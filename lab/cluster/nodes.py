"""Register the lab's GPU nodes as Node objects of the lab cluster, managed by kwok.

    nodes.py --kubeconfig ADMIN_KUBECONFIG --sysroots DIR NAME=SNAPSHOT [NAME=SNAPSHOT ...]

Each NAME becomes a Node named like the lab node, described from the hardware snapshot
(lab/snapshots) it runs on, read with the collection's own discovery
(plugins/module_utils/discover/topology.py) on a materialised copy under DIR:

- capacity and allocatable: cpu (the CPUs of the NUMA nodes), nvidia.com/gpu (the GPUs found,
  as the GPU Operator's device plugin reports them), pods 110 (the kubelet's default); memory is
  not in a snapshot and is a stated lab value (--memory);
- labels: kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch, as a kubelet sets them;
- annotation kwok.x-k8s.io/node=fake: kwok plays its kubelet (Ready, Lease, Pods);
- annotation lab.gpufabric.io/rdma-nics: the RDMA NICs (netdev, vendor, device, driver, link
  type) the RDMA shared device plugin would find on the node; the operator stand-in
  (play_operator.py) advertises the plugin's resources only where a NIC matches its selectors;
- annotation lab.gpufabric.io/dra-devices: the GPUs and RDMA NICs with their PCI address, PCIe
  root (host bridge), NUMA node and interface name, from which the stand-in publishes the
  ResourceSlices the DRA drivers would.

Server-side apply with one field manager, for the object and for its status, so a second run
changes nothing and leaves alone what others added (the RDMA resources the stand-in advertises).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import discover

FIELD_MANAGER = "gpufabric-lab-nodes"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NICS_ANNOTATION = "lab.gpufabric.io/rdma-nics"
DRA_ANNOTATION = "lab.gpufabric.io/dra-devices"
PODS_PER_NODE = "110"
ARCH = {"x86_64": "amd64", "arm64": "arm64"}
LINK_TYPES = {"Ethernet": "ether", "InfiniBand": "infiniband"}


def _snapshots():
    spec = importlib.util.spec_from_file_location("gpufabric_lab_snapshots", REPO / "lab" / "snapshots" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def materialise(snapshot: str, sysroots: Path) -> Path:
    """The snapshot unpacked under `sysroots` (kept: later runs reuse it)."""
    target = sysroots / snapshot
    if not (target / "sys").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        _snapshots().materialize(snapshot, str(target))
    return target


def _cpus(cpulist: str) -> int:
    count = 0
    for part in filter(None, cpulist.split(",")):
        lo, _dash, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


def dra_devices(facts: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """What the DRA drivers would find on the node: GPUs (minor = index, as the driver numbers
    them in BDF order) and RDMA NICs, each with its PCIe root and NUMA node."""
    gpus = [
        {"minor": g["index"], "bdf": g["bdf"], "root": g.get("host_bridge"), "model": g.get("model") or ""}
        for g in facts.get("gpus") or []
    ]
    nics = []
    for nic in facts.get("nics") or []:
        netdev = next((p.get("netdev") for p in nic.get("ports") or [] if p.get("netdev")), None)
        if nic.get("rdma_device") and netdev:
            nics.append(
                {"bdf": nic["bdf"], "root": nic.get("host_bridge"), "numa": nic.get("numa_node"), "ifName": netdev}
            )
    return {"gpus": gpus, "nics": nics}


def node_object(name: str, facts: Dict[str, Any], memory: str) -> Dict[str, Any]:
    """The Node a kubelet with the GPU and RDMA device plugins would register for `facts`."""
    cpus = sum(_cpus(n["cpulist"]) for n in facts.get("numa_nodes") or [])
    resources = {"cpu": str(cpus), "memory": memory, "pods": PODS_PER_NODE}
    if facts.get("gpus"):
        resources["nvidia.com/gpu"] = str(len(facts["gpus"]))
    nics = []
    for nic in facts.get("nics") or []:
        for port in nic.get("ports") or []:
            if not (nic.get("rdma_device") and port.get("netdev")):
                continue
            nics.append(
                {
                    "ifName": port["netdev"],
                    "vendor": nic["vendor_id"],
                    "deviceID": nic["device_id"],
                    "driver": nic.get("driver") or "",
                    "linkType": LINK_TYPES.get(port.get("link_layer"), str(port.get("link_layer") or "").lower()),
                    "rdmaDevice": nic["rdma_device"],
                }
            )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": ARCH.get((facts.get("cpu") or {}).get("arch"), "amd64"),
            },
            "annotations": {
                KWOK_ANNOTATION: "fake",
                NICS_ANNOTATION: json.dumps(nics, separators=(",", ":"), sort_keys=True),
                DRA_ANNOTATION: json.dumps(dra_devices(facts), separators=(",", ":"), sort_keys=True),
            },
        },
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def describe(pairs: Iterable[Tuple[str, str]], sysroots: Path, memory: str) -> List[Dict[str, Any]]:
    """Node objects for (name, snapshot) pairs; each snapshot is discovered once."""
    facts: Dict[str, Dict[str, Any]] = {}
    out = []
    for name, snapshot in pairs:
        if snapshot not in facts:
            facts[snapshot] = discover(str(materialise(snapshot, sysroots)))
        out.append(node_object(name, facts[snapshot], memory))
    return out


def apply_node(core, node: Dict[str, Any]) -> None:
    """Server-side apply of the Node, then of its status (a subresource of its own).

    The first apply carries the status too: a Node created through the API keeps the status it is
    created with (as a kubelet registers itself), so kwok never sees the new Node without its
    capacity. Without it, kwok could read the bare Node between the two calls and write its
    defaults (cpu 1k) over the capacity applied a moment later. On an existing Node the API
    server ignores status on the main resource, and the second apply updates it.
    """
    name = node["metadata"]["name"]
    body = node
    status = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": node["status"]}
    # The answers are not needed: leave them unparsed (the client's models are slow to build).
    kw = {
        "field_manager": FIELD_MANAGER,
        "force": True,
        "_content_type": "application/apply-patch+yaml",
        "_preload_content": False,
    }
    for call, doc in ((core.patch_node, body), (core.patch_node_status, status)):
        resp = call(name, doc, **kw)
        resp.read()
        resp.release_conn()


def register(core, nodes: List[Dict[str, Any]], workers: int = 8) -> None:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda n: apply_node(core, n), nodes))  # raises the first failure


def client(kubeconfig: str):
    from kubernetes import client as k8s_client
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    api.configuration.connection_pool_maxsize = 16
    return k8s_client.CoreV1Api(api)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description="Register lab GPU nodes as kwok-managed Node objects.")
    parser.add_argument("--kubeconfig", required=True, help="an identity that may write Nodes (the lab's admin)")
    parser.add_argument("--sysroots", required=True, type=Path, help="where snapshots are materialised (cached)")
    parser.add_argument("--memory", default="2Ti", help="memory capacity (snapshots carry none); default 2Ti")
    parser.add_argument("nodes", nargs="+", metavar="NAME=SNAPSHOT")
    args = parser.parse_args(argv)
    pairs = []
    for item in args.nodes:
        name, sep, snapshot = item.partition("=")
        if not sep or not name or not snapshot:
            parser.error(f"expected NAME=SNAPSHOT, got {item!r}")
        pairs.append((name, snapshot))
    nodes = describe(pairs, args.sysroots, args.memory)
    register(client(args.kubeconfig), nodes)
    for node in nodes:
        cap = node["status"]["capacity"]
        nics = len(json.loads(node["metadata"]["annotations"][NICS_ANNOTATION]))
        print(
            f"node {node['metadata']['name']}: cpu {cap['cpu']}, memory {cap['memory']}, "
            f"nvidia.com/gpu {cap.get('nvidia.com/gpu', '0')}, {nics} RDMA NICs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
