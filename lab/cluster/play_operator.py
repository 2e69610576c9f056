"""The lab's one stand-in: it plays the operators' reconcilers, which cannot run here (no images,
no kubelet). Everything else in the lab cluster is the real thing.

    play_operator.py --kubeconfig KUBECONFIG --mode-file FILE [--once]

It watches the operators' custom resources (table OPERANDS: one entry per kind) and Nodes, and
on every change:

- writes each custom resource's status as its operator would once its Pods run: status.state
  is the state named in the mode file (`ready`, or `notReady` to play an operator that does not
  get there; molecule/cluster_layer's side effect uses it), with one appliedStates entry per
  component the spec enables;
- advertises on each Node the extended resources the operands' device plugins would report
  there: for the RDMA shared device plugin of a NicClusterPolicy or NicNodePolicy, one resource
  `<resourcePrefix>/<resourceName>` of count rdmaHcaMax per configList entry whose selectors
  (vendors, deviceIDs, drivers, ifNames, linkTypes) match at least one RDMA NIC of the node, on
  the nodes the policy selects (NicClusterPolicy: nodeAffinity, NicNodePolicy: nodeSelector).
  A node's NICs are those lab/cluster/nodes.py found in its hardware snapshot (annotation
  lab.gpufabric.io/rdma-nics). The resources are written to status.capacity and
  status.allocatable with server-side apply under this stand-in's own field manager, so what it
  stops advertising is removed and what others wrote (kwok, nodes.py) is left alone.

- publishes, on each node, the ResourceSlices the DRA drivers' kubelet plugins would, for each
  driver a DeviceClass of the cluster selects (`device.driver == "..."`; the drivers' images
  cannot run here, so a DeviceClass stands for "the driver runs"): the GPU
  driver gpu.nvidia.com (a device `gpu-<minor>` per GPU) and dranet, dra.net (a device
  `pci-<address>` per RDMA NIC), with the attributes those drivers publish, named as they name
  them (docs/facts.md, "DRA drivers: names and device attributes"), valued from the node's
  hardware snapshot (annotation lab.gpufabric.io/dra-devices, written by nodes.py). One slice per
  driver per node, a pool of its own named after the node; removed when no DeviceClass names the
  driver any more. Per node, each driver follows the label that places it (the device-allocation
  migration of playbooks/upgrade.yml switches them, a node group at a time): no GPU driver slice on a
  Node whose GPU Operator mode label (nvidia.com/gpu-operator.resource-allocation.mode) says
  `device-plugin`, as the operator then leaves its DRA kubelet plugin off the node; no dranet slice
  on a Node whose gpufabric.io/device-allocation label says `device_plugin`, as a dranet DaemonSet
  selecting that label would. A Node with neither label gets both, as before.

The GPU Operator's ClusterPolicy, NVIDIADrivers and GPUCluster (the DRA-based stack of
gpufabric_k8s_device_allocation: dra) get the status the GPU Operator writes: state, and
Ready/Error conditions; not ready names the operand states the spec enables (the GPUCluster's
operator says only that it waits for its operand pods).

Runs with its own least-privilege identity (lab/controlplane/rbac.yaml). Adding an operator is one
more OPERANDS entry.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "gpufabric-lab-operator-standin"
NICS_ANNOTATION = "lab.gpufabric.io/rdma-nics"
DRA_ANNOTATION = "lab.gpufabric.io/dra-devices"
SLICE_LABEL = "lab.gpufabric.io/played-driver"
# Node status patches sent at a time, and the least gap between two passes over the Nodes (a watched
# Node changes with every heartbeat kwok writes; each pass lists every Node).
NODE_WORKERS = 8
NODE_PASS_GAP = 1.0
# A pass over the Nodes at least this often (seconds) even when no event asked for one.
NODE_PASS_EVERY = 30
# The per-node labels that switch a driver off a node (docs/facts.md, "GPU Operator: per-node allocation
# mode"; the collection's own label for dranet): {driver: (label, value that switches it off)}.
DRIVER_OFF = {
    "gpu.nvidia.com": ("nvidia.com/gpu-operator.resource-allocation.mode", "device-plugin"),
    "dra.net": ("gpufabric.io/device-allocation", "device_plugin"),
}
GPU_DRIVER, NIC_DRIVER = "gpu.nvidia.com", "dra.net"
PCIE_ROOT, PCI_BUS_ID = "resource.kubernetes.io/pcieRoot", "resource.kubernetes.io/pciBusID"
SELECTOR_KEYS = {
    "vendors": "vendor",
    "deviceIDs": "deviceID",
    "drivers": "driver",
    "ifNames": "ifName",
    "linkTypes": "linkType",
}


# ------------------------------------------------------------------------------- operand table
def _components_status(obj: Dict[str, Any], state: str) -> Dict[str, Any]:
    """status of a Network Operator policy: one applied state per component its spec enables."""
    spec = obj.get("spec") or {}
    applied = [{"name": "state-" + key, "state": state} for key in sorted(spec) if isinstance(spec[key], dict)]
    return {
        "state": state,
        "reason": "" if state == "ready" else "lab: operator held not ready",
        "appliedStates": applied,
    }


# ClusterPolicy operand states in the GPU Operator's order (NVIDIA/gpu-operator controllers/
# state_manager.go) and the spec section that enables each; "not ready" names the enabled ones.
GPU_STATES = (
    ("state-driver", "driver"),
    ("state-container-toolkit", "toolkit"),
    ("state-operator-validation", None),
    ("state-device-plugin", "devicePlugin"),
    ("state-dcgm-exporter", "dcgmExporter"),
    ("gpu-feature-discovery", "gfd"),
    ("state-mig-manager", "migManager"),
)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def cluster_policy_status(obj: Dict[str, Any], state: str) -> Dict[str, Any]:
    """As the GPU Operator writes it (internal/conditions/clusterpolicy.go): Ready and Error
    conditions; not ready names the operand states, "ClusterPolicy is not ready; states not ready: [...]"."""
    spec = obj.get("spec") or {}
    if state == "ready":
        ready = {"type": "Ready", "status": "True", "reason": "Reconciled", "message": "ClusterPolicy is ready"}
        error = {"type": "Error", "status": "False", "reason": "Ready", "message": ""}
    else:
        names = [n for n, key in GPU_STATES if key is None or (spec.get(key) or {}).get("enabled", True)]
        ready = {"type": "Ready", "status": "False", "reason": "Error", "message": ""}
        error = {
            "type": "Error",
            "status": "True",
            "reason": "OperandNotReady",
            "message": "ClusterPolicy is not ready; states not ready: [{}]".format(" ".join(names)),
        }
    for cond in (ready, error):
        cond["lastTransitionTime"] = _now()
    return {"state": state, "namespace": "gpu-operator", "conditions": [ready, error]}


def nvidia_driver_status(obj: Dict[str, Any], state: str) -> Dict[str, Any]:
    ready = state == "ready"
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "Reconciled" if ready else "DriverNotReady",
        "message": "" if ready else "lab: driver pods held not ready",
        "lastTransitionTime": _now(),
    }
    return {"state": state, "conditions": [condition]}


def gpu_cluster_status(obj: Dict[str, Any], state: str) -> Dict[str, Any]:
    """The GPUCluster's status as the GPU Operator writes it (controllers/gpucluster_controller.go,
    internal/conditions/gpucluster.go at v26.7.0): state, and Ready/Error conditions; while the
    operand pods are not ready, reason OperandNotReady, "Waiting for operand pods to be ready"."""
    if state == "ready":
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "Reconciled",
            "message": "All resources have been successfully reconciled",
        }
        error = {"type": "Error", "status": "False", "reason": "Ready", "message": ""}
    else:
        ready = {"type": "Ready", "status": "False", "reason": "Error", "message": ""}
        error = {
            "type": "Error",
            "status": "True",
            "reason": "OperandNotReady",
            "message": "Waiting for operand pods to be ready",
        }
    for cond in (ready, error):
        cond["lastTransitionTime"] = _now()
    return {"state": state, "namespace": "gpu-operator", "conditions": [ready, error]}


def _comparable(status: Dict[str, Any]) -> Dict[str, Any]:
    """A status without the conditions' transition times, so that an unchanged state is not
    written again (a no-op keeps the object's resourceVersion)."""
    out = dict(status)
    if isinstance(out.get("conditions"), list):
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in out["conditions"] if isinstance(c, dict)
        ]
    return out


def _rdma_shared_device_plugin(obj: Dict[str, Any]) -> List[Dict[str, Any]]:
    plugin = (obj.get("spec") or {}).get("rdmaSharedDevicePlugin") or {}
    raw = plugin.get("config")
    if not raw:
        return []
    try:
        cfg = json.loads(raw)
    except ValueError:
        return []  # the real plugin would crash-loop; nothing is advertised
    return [c for c in cfg.get("configList") or [] if isinstance(c, dict) and c.get("resourceName")]


def _match_expression(labels: Dict[str, str], expr: Dict[str, Any]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def _cluster_policy_selects(obj: Dict[str, Any], labels: Dict[str, str]) -> bool:
    required = ((obj.get("spec") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_match_expression(labels, e) for e in t.get("matchExpressions") or []) for t in terms)


def _node_policy_selects(obj: Dict[str, Any], labels: Dict[str, str]) -> bool:
    selector = (obj.get("spec") or {}).get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(frozen=True)
class Operand:
    kind: str
    group: str
    version: str
    plural: str
    status: Callable[[Dict[str, Any], str], Dict[str, Any]]
    # Which nodes an object's device plugins run on, and their resource configs.
    selects: Optional[Callable[[Dict[str, Any], Dict[str, str]], bool]] = None
    devices: Optional[Callable[[Dict[str, Any]], List[Dict[str, Any]]]] = None


OPERANDS = [
    Operand(
        "NicClusterPolicy",
        "mellanox.com",
        "v1alpha1",
        "nicclusterpolicies",
        _components_status,
        _cluster_policy_selects,
        _rdma_shared_device_plugin,
    ),
    Operand(
        "NicNodePolicy",
        "mellanox.com",
        "v1alpha1",
        "nicnodepolicies",
        _components_status,
        _node_policy_selects,
        _rdma_shared_device_plugin,
    ),
    Operand("ClusterPolicy", "nvidia.com", "v1", "clusterpolicies", cluster_policy_status),
    Operand("NVIDIADriver", "nvidia.com", "v1alpha1", "nvidiadrivers", nvidia_driver_status),
    Operand("GPUCluster", "nvidia.com", "v1alpha1", "gpuclusters", gpu_cluster_status),
]


# ----------------------------------------------------------------------------- pure decisions
def nic_matches(nic: Dict[str, str], selectors: Dict[str, Any]) -> bool:
    for key, attr in SELECTOR_KEYS.items():
        wanted = selectors.get(key) or []
        if wanted and nic.get(attr) not in wanted:
            return False
    return True


def node_resources(node: Dict[str, Any], policies: List[tuple]) -> Dict[str, str]:
    """Extended resources the device plugins of `policies` ((operand, object) pairs) advertise on `node`."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    try:
        nics = json.loads((meta.get("annotations") or {}).get(NICS_ANNOTATION) or "[]")
    except ValueError:
        nics = []
    out: Dict[str, str] = {}
    for operand, obj in policies:
        if operand.devices is None or (operand.selects and not operand.selects(obj, labels)):
            continue
        for entry in operand.devices(obj):
            selectors = entry.get("selectors") or {}
            if any(nic_matches(nic, selectors) for nic in nics):
                name = f"{entry.get('resourcePrefix') or 'rdma'}/{entry['resourceName']}"
                out[name] = str(entry.get("rdmaHcaMax") or 1000)
    return out


def owned_resources(node: Dict[str, Any]) -> Dict[str, str]:
    """The resources this stand-in owns on `node` now (its server-side apply field set)."""
    status = node.get("status") or {}
    owned: Dict[str, str] = {}
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") != FIELD_MANAGER or entry.get("subresource") != "status":
            continue
        capacity = (((entry.get("fieldsV1") or {}).get("f:status") or {}).get("f:capacity")) or {}
        for key in capacity:
            if key.startswith("f:"):
                name = key[2:]
                owned[name] = str((status.get("capacity") or {}).get(name))
    return owned


# ------------------------------------------------------------------------------- DRA drivers
def played_drivers(device_classes: List[Dict[str, Any]]) -> List[str]:
    """The drivers (of those this stand-in plays) that the cluster's DeviceClasses select."""
    found = set()
    for obj in device_classes:
        for selector in (obj.get("spec") or {}).get("selectors") or []:
            expression = str(((selector or {}).get("cel") or {}).get("expression") or "")
            for driver in (GPU_DRIVER, NIC_DRIVER):
                if re.search(r'device\.driver\s*==\s*"' + re.escape(driver) + '"', expression):
                    found.add(driver)
    return sorted(found)


def _attrs(values: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """DeviceAttributes (resource.k8s.io/v1: one of string, int, bool) of the values that are known."""
    out = {}
    for name, value in values.items():
        if value is None:
            continue
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        out[name] = {kind: value}
    return out


def driver_devices(driver: str, hardware: Dict[str, Any], node: str) -> List[Dict[str, Any]]:
    """The devices `driver` publishes for a node's hardware (annotation DRA_ANNOTATION)."""
    if driver == GPU_DRIVER:
        return [
            {
                "name": f"gpu-{g['minor']}",
                "attributes": _attrs(
                    {
                        "type": "gpu",
                        # lab values: a stable UUID per node and GPU, the product as nvidia-smi names it
                        "uuid": "GPU-{}-{:04d}".format(re.sub(r"[^a-z0-9]", "", node.lower())[:20], g["minor"]),
                        "productName": f"NVIDIA {g.get('model')}".strip(),
                        PCI_BUS_ID: g["bdf"],
                        PCIE_ROOT: g.get("root"),
                    }
                ),
            }
            for g in hardware.get("gpus") or []
        ]
    return [
        {
            "name": "pci-" + re.sub(r"[:.]", "-", n["bdf"]),
            "attributes": _attrs(
                {
                    "dra.net/pciAddress": n["bdf"],
                    "dra.net/ifName": n.get("ifName"),
                    "dra.net/numaNode": n.get("numa"),
                    "dra.net/rdma": True,
                    PCIE_ROOT: n.get("root"),
                }
            ),
        }
        for n in hardware.get("nics") or []
    ]


def slice_name(node: str, driver: str) -> str:
    return f"{node}-{driver.replace('.', '-')}"[:253]


def resource_slices(node: Dict[str, Any], drivers: List[str]) -> List[Dict[str, Any]]:
    """One ResourceSlice per played driver for a Node that carries the hardware annotation."""
    meta = node.get("metadata") or {}
    try:
        hardware = json.loads((meta.get("annotations") or {}).get(DRA_ANNOTATION) or "{}")
    except ValueError:
        hardware = {}
    labels = meta.get("labels") or {}
    out = []
    for driver in drivers:
        label, off = DRIVER_OFF.get(driver, ("", None))
        if off is not None and labels.get(label) == off:
            continue  # the driver's kubelet plugin does not run on this node
        devices = driver_devices(driver, hardware, meta["name"]) if hardware else []
        if not devices:
            continue
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": slice_name(meta["name"], driver), "labels": {SLICE_LABEL: driver}},
                "spec": {
                    "driver": driver,
                    "nodeName": meta["name"],
                    "pool": {"name": meta["name"], "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return out


# ------------------------------------------------------------------------------------ the loop
class StandIn:
    def __init__(self, kubeconfig: str, mode_file: str):
        self.kubeconfig = kubeconfig
        self.mode_file = mode_file
        self.dirty = threading.Event()
        self.nodes_dirty = threading.Event()
        self._seen: Dict[str, str] = {}  # Node name: what the Nodes' pass read of it (node_changed)

    def _api(self):
        return config.new_client_from_config(config_file=self.kubeconfig)

    def mode(self) -> str:
        try:
            with open(self.mode_file, encoding="utf-8") as fh:
                state = fh.read().strip()
        except OSError:
            state = ""
        return state if state in ("ready", "notReady") else "ready"

    def watch_forever(self, list_call: Callable, name: str, nodes_only: bool = False) -> None:
        """List+watch in a loop; an event marks the world dirty (a Node's only the Nodes' pass, and only
        when what that pass reads of it changed). A missing CRD is waited for."""
        while True:
            try:
                for event in watch.Watch().stream(list_call, timeout_seconds=60, allow_watch_bookmarks=False):
                    if nodes_only:
                        if self.node_changed(event):
                            self.nodes_dirty.set()
                        continue
                    self.dirty.set()
                    self.nodes_dirty.set()
            except ApiException as exc:
                if exc.status not in (404, 410):
                    print(f"play_operator: watch {name}: {exc.status} {exc.reason}", file=sys.stderr, flush=True)
                time.sleep(1)
            except Exception as exc:
                print(f"play_operator: watch {name}: {exc}", file=sys.stderr, flush=True)
                time.sleep(1)
            if not nodes_only:
                self.dirty.set()
            self.nodes_dirty.set()

    def node_changed(self, event: Dict[str, Any]) -> bool:
        """Whether a Node event changed what the Nodes' pass reads (its labels, the snapshot annotations,
        its capacity): kwok's heartbeats, a write every few seconds per Node, do not."""
        raw = event.get("raw_object") or {}
        meta = raw.get("metadata") or {}
        name = meta.get("name", "")
        if event.get("type") == "DELETED":
            self._seen.pop(name, None)
            return True
        annotations = meta.get("annotations") or {}
        key = json.dumps(
            [
                meta.get("labels") or {},
                annotations.get(NICS_ANNOTATION),
                annotations.get(DRA_ANNOTATION),
                (raw.get("status") or {}).get("capacity") or {},
            ],
            sort_keys=True,
        )
        if self._seen.get(name) == key:
            return False
        self._seen[name] = key
        return True

    def start_watches(self) -> None:
        core = client.CoreV1Api(self._api())
        resource = client.ResourceV1Api(self._api())

        # Wrapped, so that the watch finds no return type in a docstring and hands each event over as
        # JSON only: building a typed V1Node of each of thousands of Nodes, on every relist and
        # heartbeat, cost the stand-in a quarter of a CPU at 4,096 Nodes.
        def nodes(*args, **kw):
            return core.list_node(*args, **kw)

        def device_classes(*args, **kw):
            return resource.list_device_class(*args, **kw)

        threads = [
            threading.Thread(target=self.watch_forever, args=(nodes, "nodes", True), daemon=True),
            threading.Thread(target=self.watch_forever, args=(device_classes, "deviceclasses"), daemon=True),
        ]
        for operand in OPERANDS:
            custom = client.CustomObjectsApi(self._api())

            def lister(*args, _o=operand, _c=custom, **kw):
                return _c.list_cluster_custom_object(_o.group, _o.version, _o.plural, *args, **kw)

            threads.append(threading.Thread(target=self.watch_forever, args=(lister, operand.plural), daemon=True))
        for t in threads:
            t.start()

    def reconcile(self) -> int:
        """One full pass: the custom resources' statuses, then the Nodes' resources and slices."""
        api = self._api()
        changed, policies = self.reconcile_statuses(api)
        return changed + self.reconcile_nodes(api, policies)

    @staticmethod
    def policies(api) -> List[tuple]:
        """The (operand, object) pairs of every custom resource not being deleted."""
        custom = client.CustomObjectsApi(api)
        out = []
        for operand in OPERANDS:
            try:
                items = custom.list_cluster_custom_object(operand.group, operand.version, operand.plural)["items"]
            except ApiException as exc:
                if exc.status == 404:
                    continue  # CRD not installed (yet)
                raise
            out.extend((operand, obj) for obj in items if not (obj.get("metadata") or {}).get("deletionTimestamp"))
        return out

    def reconcile_statuses(self, api) -> tuple:
        """Write each custom resource's status; (how many were written, the (operand, object) pairs)."""
        custom = client.CustomObjectsApi(api)
        state = self.mode()
        changed = 0
        policies = self.policies(api)
        for operand, obj in policies:
            want = operand.status(obj, state)
            have, wanted = _comparable(obj.get("status") or {}), _comparable(want)
            if {k: have.get(k) for k in wanted} != wanted:
                custom.patch_cluster_custom_object_status(
                    operand.group,
                    operand.version,
                    operand.plural,
                    obj["metadata"]["name"],
                    {"status": want},
                    _content_type="application/merge-patch+json",
                )
                changed += 1
        return changed, policies

    def reconcile_nodes(self, api, policies) -> int:
        """Advertise each Node's resources (NODE_WORKERS patches at a time) and publish the slices."""
        core = client.CoreV1Api(api)
        # The list as JSON: the typed NodeList of thousands of Nodes costs seconds to build.
        nodes = json.loads(core.list_node(_preload_content=False).data).get("items") or []
        patches = []
        for node in nodes:
            want = node_resources(node, policies)
            if owned_resources(node) != want:
                patches.append((node["metadata"]["name"], want))

        def patch(item):
            name, want = item
            body = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"capacity": want, "allocatable": want},
            }
            core.patch_node_status(
                name, body, field_manager=FIELD_MANAGER, force=True, _content_type="application/apply-patch+yaml"
            )

        with ThreadPoolExecutor(max_workers=NODE_WORKERS) as pool:
            list(pool.map(patch, patches))
        return len(patches) + self.reconcile_slices(api, nodes)

    def reconcile_slices(self, api, nodes: List[Dict[str, Any]]) -> int:
        """Publish the played drivers' ResourceSlices; remove those of drivers no longer played."""
        resource = client.ResourceV1Api(api)
        drivers = played_drivers(api.sanitize_for_serialization(resource.list_device_class()).get("items") or [])
        played = api.sanitize_for_serialization(resource.list_resource_slice(label_selector=SLICE_LABEL))
        have = {o["metadata"]["name"]: o for o in played.get("items") or []}
        want = {}
        for node in nodes if drivers else []:
            for item in resource_slices(node, drivers):
                want[item["metadata"]["name"]] = item
        changed = 0
        for name, item in want.items():
            current = have.get(name)
            if current and current.get("spec", {}).get("devices") == item["spec"]["devices"]:
                continue
            resource.patch_resource_slice(
                name, item, field_manager=FIELD_MANAGER, force=True, _content_type="application/apply-patch+yaml"
            )
            changed += 1
        for name in sorted(set(have) - set(want)):
            resource.delete_resource_slice(name)
            changed += 1
        return changed

    def node_loop(self) -> None:
        """The Nodes' pass, in a thread of its own: with thousands of Nodes it takes minutes, and the
        custom resources' statuses must not wait for it (a real operator's status does not either)."""
        last_full, api = 0.0, None
        while True:
            self.nodes_dirty.wait(1.0)
            if self.nodes_dirty.is_set() or time.monotonic() - last_full > NODE_PASS_EVERY:
                self.nodes_dirty.clear()
                try:
                    api = api or self._api()  # one client, and its connections, while it works
                    self.reconcile_nodes(api, self.policies(api))
                    last_full = time.monotonic()
                except Exception as exc:
                    print(f"play_operator: reconcile the Nodes: {exc}", file=sys.stderr, flush=True)
                    api = None
                    time.sleep(0.5)
                time.sleep(NODE_PASS_GAP)

    def run(self, once: bool) -> int:
        if once:
            self.reconcile()
            return 0
        self.start_watches()
        threading.Thread(target=self.node_loop, daemon=True).start()
        last_mode, last_full, api = None, 0.0, None
        while True:
            self.dirty.wait(0.5)
            mode = (self.mode(), _mtime(self.mode_file))
            if self.dirty.is_set() or mode != last_mode or time.monotonic() - last_full > 10:
                self.dirty.clear()
                try:
                    api = api or self._api()
                    self.reconcile_statuses(api)
                    last_mode, last_full = mode, time.monotonic()
                except Exception as exc:
                    print(f"play_operator: reconcile: {exc}", file=sys.stderr, flush=True)
                    api = None
                    time.sleep(0.5)


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description="Play the operators' reconcilers in the lab cluster.")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--mode-file", required=True, help="holds 'ready' or 'notReady'")
    parser.add_argument("--once", action="store_true", help="reconcile once and exit")
    args = parser.parse_args(argv)
    return StandIn(args.kubeconfig, args.mode_file).run(args.once)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
