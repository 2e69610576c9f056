"""Benchmark: the node_labels module (plugins/modules/node_labels.py) on a private lab control plane.

Prints figures, never fails on timing. For N = 64, 512 and 4,096 kwok Nodes (registered the way the
lab registers its nodes, lab/cluster/nodes.py, from the dgx-h200-8x8 snapshot), with the seven
labels of a node group (the cluster plan's node_labels) under a value new for each N:
- the first call (every Node patched), a no-op rerun and a check-mode run: wall time, controller
  CPU-s of this process (the module runs in it, as Ansible runs it in one), Nodes read and patched;
- the PATCH requests to Nodes the API server counted (apiserver_request_total) during each call.
The cluster is private (a temporary GPUFABRIC_KUBE_DIR) and removed at the end. Before each N it
waits (at most 300 s) until the node controllers stop patching the new Nodes; what they still patch
during a call shows in the API server's count (the module's own writes are its "patched").

One round on the 2-CPU development machine under load (8 workers, the default):
N=64: first 1.1 s / 0.17 CPU-s, rerun 0.3 s / 0.12 CPU-s, 0 writes; N=512: first 9.6 s / 1.0 CPU-s,
rerun 1.1 s / 0.4 CPU-s, 0 writes; N=4,096: first 110 s / 8.3 CPU-s, rerun 16 s / 4.0 CPU-s with
0 patches by the module (the API server counted 119 PATCHes of the node controllers, still
settling after the 300 s wait), check run 19 s / 3.6 CPU-s. The list of 4,096 kwok Nodes (with
their status) is most of a rerun's time.

    .venv/bin/python benchmarks/bench_node_labels.py [N ...]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import private_cluster as pc  # benchmarks/private_cluster.py
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.modules import node_labels

SIZES = [64, 512, 4096]
P = "gpufabric.io"


def call(kubeconfig: Path, labels, check: bool = False):
    args = {"kubeconfig": str(kubeconfig), "labels": labels, "owned": [], "_ansible_check_mode": check}
    out = io.StringIO()
    cpu0, t0 = time.process_time(), time.perf_counter()
    with patch_module_args(args), contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        node_labels.main()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return json.loads(out.getvalue()), wall, cpu


def group_labels(n: int):
    return {
        f"{P}/node-group": f"bench-{n}",
        f"{P}/gpu-model": "NVIDIA_H200",
        f"{P}/gpu-count": "8",
        f"{P}/nic-model": "ConnectX-7",
        f"{P}/rails": "8",
        f"{P}/numa-nodes": "2",
        f"{P}/rail-numa": "0.0.0.0.1.1.1.1",
    }


def main(argv) -> int:
    sizes = [int(a) for a in argv] or SIZES
    with tempfile.TemporaryDirectory(prefix="bench-labels-") as tmp, pc.running(Path(tmp)) as cluster:
        have = 0
        for n in sizes:
            names = [f"gpu-node-{i:04d}" for i in range(n)]
            t0 = time.perf_counter()
            pc.register(cluster, [(x, "dgx-h200-8x8") for x in names[have:]], Path(tmp) / "sysroots", 16)
            print(f"N={n}: registered {n - have} more Nodes in {time.perf_counter() - t0:.1f} s")
            have = n
            pc.settle(cluster)
            wanted = {x: group_labels(n) for x in names}
            for what, check in (("check run", True), ("first run", False), ("no-op rerun", False)):
                before = pc.node_patches(cluster, by_code=True)
                out, wall, cpu = call(cluster.kubeconfig, wanted, check)
                codes = pc.node_patches(cluster, by_code=True)
                codes.subtract(before)
                writes = ", ".join(f"{v} x {k}" for k, v in sorted(codes.items()) if v) or "0"
                print(
                    f"  {what:12s} {wall:7.2f} s wall, {cpu:6.2f} CPU-s; read {out.get('read')}, "
                    f"patched {out.get('patched')}, unchanged {out.get('unchanged')}; "
                    f"PATCH /nodes counted by the API server: {writes}"
                    + (f"; FAILED: {out.get('msg')}" if out.get("failed") else "")
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
