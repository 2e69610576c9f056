"""The lab of tests/fault/test_drain_faults.py: two lab nodes (fault-upg-01, fault-upg-02) prepared
as lab/prepare.yml prepares them (hardware snapshot, simulators, the lab's signed repositories, the
golden image's NVIDIA driver), a private control plane in which they are Nodes, one workload Pod on
each, and an inventory of their own. It runs the collection's playbooks against them as a user
does and reads what the runs left: each node's driver stack, its Node, the Pods, the API requests
the collection's identity made (the control plane's audit log)."""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from controlplane_support import Cluster, controlplane_binaries
from role_runner import ansible_playbook

REPO = Path(__file__).resolve().parents[2]
NODES = {"fault-upg-01": "dgx-h200-8x8@1", "fault-upg-02": "dgx-h200-8x8@2"}
# The two NVIDIA driver releases of the lab's CUDA repository (lab/repo/packages.yml).
DRIVERS = ("580.95.05", "580.105.08")
SYSROOT = "/var/lib/gpufabric-lab/sysroot"
ANNOTATIONS = "rollout.gpufabric.io/"
# One workload Deployment pinned to each node (kwok runs its Pod).
WORKLOADS = {"fault-upg-01": "db", "fault-upg-02": "cache"}


def driver_intent(version: str) -> Dict[str, Any]:
    return {
        "managed_by": "host",
        "version": version,
        "kernel_module": "open",
        "packages": ["nvidia-kernel-open-dkms", "nvidia-driver-cuda"],
    }


def inventory(state: Path, connection: str) -> Dict[str, Any]:
    """Only the NVIDIA driver layer moves (no DOCA-OFED, no GDS): each run stays short."""
    return {
        "all": {
            "hosts": {
                "localhost": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                }
            },
            "vars": {
                "gpufabric_kubeconfig": str(state / "kube" / "kubeconfig"),
                "gpufabric_k8s_mode": "apply",
                "gpufabric_instance": "fault-upg",
                "gpufabric_report_path": str(state / "rollout-report.txt"),
                "gpufabric_k8s_render_dir": str(state / "rendered"),
                "plan_dir": str(state / "plan"),
                "gpufabric_nccl_version": "2.27.3",
                "gpufabric_rails": {"supernet": "10.200.0.0/16"},
                "gpufabric_cluster_cidrs": {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
                "gpufabric_upgrade_serial": "1",
                "gpufabric_upgrade_max_fail_percentage": 0,
                "gpufabric_upgrade_cluster": False,
                "gpufabric_upgrade_gpu_probe": False,
                "gpufabric_batch_size": 1,
                "gpufabric_max_fail_percentage": 0,
            },
            "children": {
                "gpu_nodes": {
                    "hosts": {name: {"gpufabric_lab_snapshot": snap} for name, snap in NODES.items()},
                    "vars": {
                        "gpufabric_lab_connection": connection,
                        "ansible_connection": "containers.podman.podman" if connection == "podman" else "ssh",
                        "ansible_user": "ansible",
                        "ansible_become": True,
                        "ansible_python_interpreter": "/usr/bin/python3",
                        "ansible_ssh_common_args": f"-F {REPO / '.lab' / 'ssh' / 'config'}",
                        "gpufabric_sysroot": SYSROOT,
                        "gpufabric_lab_repo": True,
                        "gpufabric_lab_nvidia_driver": f"open {DRIVERS[0]}",
                        "gpu_driver_repo_url": "file:///var/lib/gpufabric-lab/repo/cuda/debian12/x86_64",
                        # The lab repositories' throwaway key (lab/repo/build.py writes its fingerprint).
                        "gpu_driver_repo_key_fingerprints": [(REPO / ".lab/repo/signing-key.fpr").read_text().strip()],
                        "gpufabric_gpu_driver": driver_intent(DRIVERS[0]),
                        "gpufabric_doca_ofed_enabled": False,
                        "gpufabric_gds_enabled": False,
                    },
                }
            },
        }
    }


def workloads() -> List[Dict[str, Any]]:
    objects: List[Dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}]
    for node, app in WORKLOADS.items():
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app, "namespace": "ml"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": {"app": app}},
                        "spec": {
                            "nodeSelector": {"kubernetes.io/hostname": node},
                            "containers": [{"name": app, "image": f"registry.lab.invalid/{app}:1"}],
                        },
                    },
                },
            }
        )
    return objects


class Run:
    def __init__(self, rc: int, out: str, since: float, until: float):
        self.rc = rc
        self.out = out
        self.said = " ".join(out.split())  # messages as one line, whatever the wrapping
        self.since = since
        self.until = until

    def tail(self) -> str:
        return self.out[-4000:]


class DrainLab:
    def __init__(self, state: Path, connection: str):
        self.state = state
        self.cluster: Optional[Cluster] = None  # set once the control plane is up
        self.connection = connection
        self.timings: List[str] = []  # each run's playbook, exit status and seconds (printed at the end)
        self.inventory = state / "inventory.yml"
        self.inventory.write_text(yaml.safe_dump(inventory(state, connection)))

    # ------------------------------------------------------------------------------ runs
    def env(self) -> Dict[str, str]:
        """The lab's transport, as lab/common.sh's lab_connection_env sets it."""
        env = {
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_CALLBACK_PLUGINS": str(REPO / "lab" / "callback"),
            "ANSIBLE_CALLBACKS_ENABLED": "warm_workers",
            "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",  # no line wrapping of long messages
            "ANSIBLE_STRATEGY": "linear",
        }
        if self.connection == "mitogen":
            env.update(ANSIBLE_STRATEGY_PLUGINS=str(REPO / "lab" / "strategy"), ANSIBLE_STRATEGY="mitogen_linear")
        return env

    def playbook(self, path: str, *args: str, extra: Optional[Dict[str, Any]] = None) -> Run:
        """ansible-playbook PATH against the lab's inventory; the audit log is read from its start."""
        since = time.time()
        cmd = ["-i", str(self.inventory), "-e", f"gpufabric_lab_connection={self.connection}"]
        if extra:
            cmd += ["-e", json.dumps(extra)]
        done = ansible_playbook(self.state / "runs", *cmd, str(REPO / path), *args, env=self.env(), timeout=600)
        self.timings.append(f"{path} rc={done.returncode} {time.time() - since:.0f} s")
        return Run(done.returncode, done.stdout + "\n" + done.stderr, since, time.time())

    # ------------------------------------------------------------------------------ what runs leave
    def node_exec(self, node: str, script: str, check: bool = True) -> str:
        done = subprocess.run(["podman", "exec", node, "sh", "-c", script], capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            pytest.fail(f"podman exec {node}: {done.stderr.strip()}")
        return done.stdout

    def stop(self, node: str) -> None:
        subprocess.run(["podman", "stop", "-t", "2", node], capture_output=True, check=False)

    def running(self, node: str) -> bool:
        done = subprocess.run(
            ["podman", "inspect", "-f", "{{.State.Running}}", node], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() == "true"

    def host(self, node: str) -> Dict[str, str]:
        """The node's NVIDIA driver stack: installed packages, the driver the node boots, the loaded one."""
        out = self.node_exec(
            node,
            "dpkg-query -W -f='${Package}=${Version} ${Status}\\n' nvidia-kernel-open-dkms nvidia-driver-cuda "
            "2>/dev/null | sed 's/^/pkg /'; echo \"boots $(cat /etc/gpufabric-lab/nvidia-driver)\"; "
            f'echo "loaded $(cat {SYSROOT}/sys/module/nvidia/version 2>/dev/null || echo none)"; '
            f"echo \"module $(grep '^nvidia ' {SYSROOT}/proc/modules)\"",
        )
        state: Dict[str, str] = {}
        for line in out.splitlines():
            key, _sep, value = line.partition(" ")
            if key == "pkg":
                name, _eq, rest = value.partition("=")
                state[name] = rest
            elif key:
                state[key] = value.strip()
        return state

    def node(self, name: str) -> Dict[str, Any]:
        node = json.loads(self.cluster.kubectl("get", "node", name, "-o", "json").stdout)
        annotations = node["metadata"].get("annotations") or {}
        return {
            "unschedulable": bool(node["spec"].get("unschedulable")),
            "annotations": {k: v for k, v in annotations.items() if k.startswith(ANNOTATIONS)},
        }

    def pods(self) -> Dict[str, Dict[str, str]]:
        """{app: {name, uid, node, phase}} of the ml namespace's Pods (one per Deployment)."""
        items = json.loads(self.cluster.kubectl("get", "pods", "-n", "ml", "-o", "json").stdout)["items"]
        return {
            p["metadata"]["labels"]["app"]: {
                "name": p["metadata"]["name"],
                "uid": p["metadata"]["uid"],
                "node": p["spec"].get("nodeName", ""),
                "phase": p["status"].get("phase", ""),
            }
            for p in items
            if not p["metadata"].get("deletionTimestamp")
        }

    def snapshot(self) -> Dict[str, Any]:
        return {
            "hosts": {n: self.host(n) for n in NODES if self.running(n)},
            "nodes": {n: self.node(n) for n in NODES},
            "pods": self.pods(),
        }

    def objects_missing(self) -> List[str]:
        """The workload objects and Nodes that are gone (none may be)."""
        missing = []
        for kind, namespace, name in [("namespace", "", "ml"), *[("node", "", n) for n in NODES]] + [
            ("deployment", "ml", app) for app in WORKLOADS.values()
        ]:
            args = ["get", kind, name] + (["-n", namespace] if namespace else [])
            if self.cluster.kubectl(*args, check=False).returncode != 0:
                missing.append(f"{kind}/{namespace + '/' if namespace else ''}{name}")
        return missing

    def wait_workloads_running(self) -> Dict[str, Dict[str, str]]:
        """Each Deployment's Pod runs on its node again (a drained node's Pod comes back once it is uncordoned)."""
        pods: Dict[str, Dict[str, str]] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pods = self.pods()
            if all(pods.get(a, {}).get("phase") == "Running" and pods[a]["node"] == n for n, a in WORKLOADS.items()):
                return pods
            time.sleep(0.5)
        pytest.fail(f"the workload Pods do not all run on their nodes: {pods}; Nodes: {self.snapshot()['nodes']}")

    def requests(self, run: Run) -> List[Dict[str, Any]]:
        """The collection identity's API requests during `run`, from the audit log."""
        out = []
        log = self.state / "kube" / "logs" / "audit.log"
        for line in log.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if (event.get("user") or {}).get("username") != "gpufabric-rollout":
                continue
            stamp = event.get("requestReceivedTimestamp", "")
            when = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
            if not run.since - 1 <= when <= run.until + 1:
                continue
            ref = event.get("objectRef") or {}
            out.append(
                {
                    "time": stamp,
                    "verb": event.get("verb"),
                    "resource": ref.get("resource"),
                    "subresource": ref.get("subresource", ""),
                    "namespace": ref.get("namespace", ""),
                    "name": ref.get("name", ""),
                    "code": (event.get("responseStatus") or {}).get("code"),
                }
            )
        return out


def touched(requests: List[Dict[str, Any]], node: str, pods: List[str]) -> List[Dict[str, Any]]:
    """The writes a run made to `node` (cordon, annotations) and the evictions of `pods`."""
    return [
        r
        for r in requests
        if (r["resource"] == "nodes" and r["name"] == node and r["verb"] in ("patch", "update"))
        or (r["subresource"] == "eviction" and r["name"] in pods)
    ]


def nodes_sh(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "lab" / "nodes.sh"), *args], capture_output=True, text=True, check=False)


def start_cluster(kube: Path) -> Cluster:
    """A control plane of its own (lab/kube.sh in `kube`) with the two Nodes registered from their
    snapshots; no CRDs (these runs write no custom objects)."""
    cluster = Cluster(kube, controlplane_binaries(), kube.parent / "sysroots")
    started = cluster.kube_sh("start", check=False)
    if started.returncode != 0:
        pytest.fail("lab/kube.sh start failed:\n" + started.stderr[-3000:])
    nodes = [f"{name}={snap}" for name, snap in NODES.items()]
    registered = subprocess.run(
        [
            sys.executable,
            str(REPO / "lab/cluster/nodes.py"),
            "--kubeconfig",
            str(cluster.admin),
            "--sysroots",
            str(cluster.sysroots),
            *nodes,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if registered.returncode != 0:
        pytest.fail("lab/cluster/nodes.py failed:\n" + registered.stderr[-3000:])
    return cluster


def start_lab(state: Path):
    """Generator: the lab, up and prepared (the control plane starts while the nodes are prepared);
    its nodes and its control plane are removed after the yield."""
    connection = os.environ.get("GPUFABRIC_LAB_CONNECTION") or "mitogen"
    begin = time.time()
    # Nodes left by an interrupted run of this file would carry its state: start afresh.
    nodes_sh("down", *NODES)
    try:
        with ThreadPoolExecutor(1) as pool:
            cluster = pool.submit(start_cluster, state / "kube")
            up = nodes_sh("up", *NODES)
            if up.returncode != 0:
                pytest.fail("lab/nodes.sh up failed:\n" + up.stderr[-3000:])
            lab = DrainLab(state, connection)
            prepared = lab.playbook("lab/prepare.yml")
            lab.cluster = cluster.result()
        if prepared.rc != 0:
            pytest.fail("lab/prepare.yml failed:\n" + prepared.tail())
        lab.cluster.apply(workloads())
        lab.wait_workloads_running()
        lab.timings.append(f"lab up and prepared {time.time() - begin:.0f} s")
        yield lab
        print("\n[drain lab] " + "; ".join(lab.timings))
    finally:
        nodes_sh("down", *NODES)
        subprocess.run(
            [str(REPO / "lab" / "kube.sh"), "stop", "--purge"],
            env=dict(os.environ, GPUFABRIC_KUBE_DIR=str(state / "kube")),
            capture_output=True,
            check=False,
        )


def short_state() -> Path:
    """The lab's state directory (the kubeconfigs, the audit log, the inventory, the report)."""
    return Path(tempfile.mkdtemp(prefix="gf-drain."))
