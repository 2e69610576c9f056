"""The cordon timeline of the lab's Nodes during a run: one watch on the API server (kubectl get
nodes --watch) whose events come in the server's order, so "both cordoned at once" is read from
the sequence itself, not from timestamps of separate polls."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Dict, List, Tuple

from host_lab import NODES, HostLab, wait_for


class CordonWatch:
    def __init__(self, lab: HostLab):
        self.lab = lab
        self.events: List[Tuple[float, str, bool]] = []  # (seconds since start, Node, cordoned)
        self.cordoned: Dict[str, bool] = {}
        self._overlaps: List[Tuple[float, Dict[str, bool]]] = []

    def __enter__(self) -> CordonWatch:
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            [
                "kubectl",
                "--kubeconfig",
                str(self.lab.kube_dir / "admin.kubeconfig"),
                "get",
                "nodes",
                "--watch",
                "-o",
                'jsonpath={.metadata.name} {.spec.unschedulable}{"\\n"}',
            ],
            env=self.lab.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        # The watch lists every Node first: the timeline starts from their state.
        assert wait_for(lambda: set(NODES) <= set(self.cordoned)), "the Node watch did not start"
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            name, _sep, flag = line.strip().partition(" ")
            if name not in NODES:
                continue
            cordoned = flag == "true"
            if self.cordoned.get(name) != cordoned:
                self.events.append((round(time.monotonic() - self.start, 1), name, cordoned))
            self.cordoned[name] = cordoned
            if sum(self.cordoned.values()) > 1:
                self._overlaps.append((time.monotonic() - self.start, dict(self.cordoned)))

    def __exit__(self, *exc) -> None:
        time.sleep(1)  # the last events of the run reach the watch
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=5)

    def windows(self) -> Dict[str, List[Tuple[float, float]]]:
        """Per Node, the (from, to) seconds it was cordoned (to = -1: still cordoned)."""
        out: Dict[str, List[Tuple[float, float]]] = {n: [] for n in NODES}
        opened: Dict[str, float] = {}
        for at, name, cordoned in self.events:
            if cordoned:
                opened[name] = at
            elif name in opened:
                out[name].append((opened.pop(name), at))
        for name, at in opened.items():
            out[name].append((at, -1))
        return out

    def both_cordoned(self) -> List[Tuple[float, Dict[str, bool]]]:
        return self._overlaps


WORKLOAD = """
apiVersion: v1
kind: Namespace
metadata: {name: fault-drain}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: neighbour, namespace: fault-drain}
spec:
  replicas: 4
  selector: {matchLabels: {app: neighbour}}
  template:
    metadata: {labels: {app: neighbour}}
    spec:
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists}]
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
           labelSelector: {matchLabels: {app: neighbour}}}
      containers: [{name: app, image: registry.invalid/neighbour:1}]
"""


def kubectl(lab: HostLab, *args: str, stdin: str = "") -> str:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.kube_dir / "admin.kubeconfig"), *args],
        input=stdin,
        env=lab.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def neighbour_pods(lab: HostLab) -> Dict[str, str]:
    """{Pod: Node} of the neighbour's Running Pods."""
    out = kubectl(
        lab,
        "get",
        "pods",
        "-n",
        "fault-drain",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\\n"}{end}',
    )
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return {r[0]: r[1] for r in rows if len(r) == 3 and r[2] == "Running"}


def start_neighbour(lab: HostLab) -> Dict[str, str]:
    """A neighbour's Deployment (4 Pods, spread over both Nodes), Running before the run."""
    kubectl(lab, "apply", "-f", "-", stdin=WORKLOAD)
    ok = wait_for(lambda: len(neighbour_pods(lab)) == 4 and set(neighbour_pods(lab).values()) == set(NODES), 60)
    assert ok, f"the neighbour's Pods did not run on both Nodes: {neighbour_pods(lab)}"
    return neighbour_pods(lab)
