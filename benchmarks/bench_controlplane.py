"""Benchmark: the lab's control plane (lab/controlplane) -- build, start, and 4,096 GPU nodes.

Prints, never fails on timing:
- the build times recorded when the binaries in the machine's cache were built
  (<cache>/controlplane/<key>/build-times.tsv, written by lab/controlplane/build.sh); a cold
  build is one that started with empty Go module and build caches;
- `lab/kube.sh start` from the cached binaries: a fresh cluster (new PKI, empty etcd) and a
  restart of a stopped one (same state), each to "default ServiceAccount exists";
- registering 4,096 GPU nodes the way the lab registers its nodes (lab/cluster/nodes.py:
  server-side apply of each Node and its status, capacity from the dgx-h200-8x8 snapshot's
  discovery), the time until kwok reports all of them Ready (waiting at most BENCH_READY_SECONDS,
  default 300), how many are Ready then and 30 s later and, for the others, why (their Ready
  condition's reason and message, or none written yet), and the resident memory of etcd,
  kube-apiserver, kube-controller-manager, kube-scheduler and kwok afterwards.
Usage: .venv/bin/python benchmarks/bench_controlplane.py [NODES]   (default 4,096)
Each cluster is private (a temporary GPUFABRIC_KUBE_DIR) and removed at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lab" / "cluster"))

import nodes as lab_nodes  # lab/cluster/nodes.py

NODES = 4096
# How long to wait for every Node to be Ready before saying how many are and why the others are not.
READY_SECONDS = int(os.environ.get("BENCH_READY_SECONDS", "300"))
KUBE_SH = REPO / "lab" / "kube.sh"
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]


def kube_sh(state: Path, *args: str) -> None:
    subprocess.run(
        [str(KUBE_SH), *args],
        env=dict(os.environ, GPUFABRIC_KUBE_DIR=str(state)),
        check=True,
        capture_output=True,
        text=True,
    )


def build_times() -> None:
    bindir = Path(
        subprocess.run(
            [str(REPO / "lab" / "controlplane" / "build.sh"), "--dir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    record = bindir / "build-times.tsv"
    if not record.exists():
        print(f"build: no record in {bindir} (binaries not built by build.sh on this machine)")
        return
    rows = [line.split("\t") for line in record.read_text().splitlines() if line.strip()]
    total = sum(int(r[1]) for r in rows)
    print(f"build ({rows[0][2]}, recorded {rows[0][3]} .. {rows[-1][3]}), {bindir}:")
    for step, seconds, *_rest in rows:
        print(f"  {step:28s} {int(seconds):5d} s")
    print(f"  {'total':28s} {total:5d} s")


def start_times() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as tmp:
        state = Path(tmp) / "kube"
        t0 = time.perf_counter()
        kube_sh(state, "start")
        fresh = time.perf_counter() - t0
        kube_sh(state, "stop")
        t0 = time.perf_counter()
        kube_sh(state, "start")
        restart = time.perf_counter() - t0
        kube_sh(state, "stop", "--purge")
    print(f"start from cached binaries: fresh cluster {fresh:.1f} s, restart {restart:.1f} s (goal <= 15 s)")


def rss_mib(state: Path) -> str:
    out = []
    for name in COMPONENTS:
        try:
            pid = int((state / "run" / f"{name}.pid").read_text())
            status = Path(f"/proc/{pid}/status").read_text()
            kib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            out.append(f"{name} {kib / 1024:.0f} MiB")
        except (OSError, ValueError, StopIteration):
            out.append(f"{name} ?")
    return ", ".join(out)


def many_nodes(nodes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as tmp:
        state, sysroots = Path(tmp) / "kube", Path(tmp) / "sysroots"
        kube_sh(state, "start")
        try:
            names = [f"gpu-node-{i:04d}" for i in range(1, nodes + 1)]
            t0 = time.perf_counter()
            objs = lab_nodes.describe([(n, "dgx-h200-8x8") for n in names], sysroots, "2Ti")
            described = time.perf_counter() - t0
            core = lab_nodes.client(str(state / "admin.kubeconfig"))
            t0 = time.perf_counter()
            lab_nodes.register(core, objs, workers=16)
            registered = time.perf_counter() - t0
            print(
                f"{nodes} nodes: described from one snapshot in {described:.1f} s, registered (2 server-side "
                f"applies each, 16 clients) in {registered:.1f} s = {nodes / registered:.0f} nodes/s"
            )

            def ready() -> Tuple[int, Counter]:
                """Nodes Ready, and why the others are not: their Ready condition's reason and message,
                or that kwok has not written one yet."""
                # Raw JSON from the watch cache: the client's models for 4,096 Nodes take seconds to build.
                resp = core.list_node(resource_version="0", _preload_content=False)
                why: Counter = Counter()
                count = 0
                for n in json.loads(resp.data)["items"]:
                    cond = next((c for c in n["status"].get("conditions") or [] if c["type"] == "Ready"), None)
                    if cond and cond["status"] == "True":
                        count += 1
                    elif cond:
                        why[f"Ready={cond['status']} {cond.get('reason', '')}: {cond.get('message', '')[:100]}"] += 1
                    else:
                        why["no Ready condition yet (kwok has not reported the node)"] += 1
                return count, why

            def show(count: int, why: Counter, when: str) -> None:
                print(f"{count}/{nodes} nodes Ready (kwok) {when}")
                for reason, many in why.most_common():
                    print(f"  not Ready: {many} x {reason}")

            deadline = time.perf_counter() + READY_SECONDS
            count, why = ready()
            while count < nodes and time.perf_counter() < deadline:
                time.sleep(2)
                count, why = ready()
            all_ready = time.perf_counter() - t0
            show(count, why, f"{all_ready:.1f} s after the first registration (waited at most {READY_SECONDS} s)")
            time.sleep(30)  # a few lease renewals of every node (kwok renews like a kubelet)
            count, why = ready()
            show(count, why, f"after 30 s more of lease renewals; resident memory: {rss_mib(state)}")
            cap = core.read_node(names[-1]).status.capacity
            print(f"{names[-1]}: cpu {cap['cpu']}, memory {cap['memory']}, nvidia.com/gpu {cap['nvidia.com/gpu']}")
        finally:
            kube_sh(state, "stop", "--purge")


def main() -> int:
    build_times()
    start_times()
    many_nodes(int(sys.argv[1]) if len(sys.argv) > 1 else NODES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
