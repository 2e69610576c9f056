"""Benchmark: the plan (playbooks/plan.yml) with every node really read, per node, on the controller.

N inventory hosts in gpu_nodes on ``ansible_connection: local`` (this Python as their interpreter),
each with ``gpufabric_sysroot`` on its own materialized lab snapshot (lab/snapshots: dgx-h200-8x8,
pcie-l40s-4x2 and roce-vlan-gid layouts at node indices 1..N, so node groups differ) carrying a
loaded open driver 580.95.05 (/proc/driver/nvidia/version, as the lab's modprobe shim writes it).
The cluster is planned in render mode without a kubeconfig (no Kubernetes is asked). The DOCA 2.9.1
repository and the GPU driver repository (gpufabric_gpu_driver.packages, so the driver index is
read too) are the lab's stand-in repositories (lab/repo/build.py into a temporary directory),
served over HTTP on 127.0.0.1 by a thread of this process (its CPU is not counted).

Measured per ansible-playbook run: wall time; CPU-s (user + system) of its whole process tree
(os.wait4 on it: every worker and module process it reaped) and the largest process's peak RSS; and
the controller's own CPU-s, its main process and every worker it forked without the processes they
started (benchmarks/controller_cpu.py records each one's getrusage). With a local connection the
modules run on this machine too: the tree's CPU less the controller's is the modules and the shells
that start them. Printed per size and round, and the marginal CPU-s per node between the smallest
and the largest size ((cpu_b - cpu_a) / (b - a)), which takes out the fixed start-up (the cluster
checks, loading the collection).

Rounds on the 2-CPU development machine, ansible-core 2.21.5. Controller CPU-s, measured as above,
interleaved with the code before (checkout 875f4dc) in the same hour: before N=8 9.5 and 7.2, N=64
40.2 and 39.4 (0.62 per node; marginal 0.55 and 0.58); after (setup in the node check's task, the
checked variables kept by the last set_fact, the argument specs read once per run) N=8 5.7 and 7.5,
N=64 32.6 and 33.5 (0.52 per node; marginal 0.48 and 0.46). Workers per run at N=64: 530 before,
402 after. On 2026-12-07, with the package entries trimmed and the plan role's own argument check
left to the node check (338 workers at N=64): N=8 0.60 to 0.72 per node, N=64 0.43 to 0.48 per node
(five rounds), marginal 0.40 to 0.45. That evening, with the report section rendered from the plan
alone and the cluster part reading the nodes' variables untemplated: N=8 0.44 to 0.46 per node and
N=64 0.27 to 0.29 (three rounds; the code before 0.48 to 0.51 and 0.33 to 0.34 in the same hour),
marginal 0.25 to 0.26; an hour later, on a slower machine, N=8 0.51 to 0.66 and N=64 0.35 (the
code before 0.52 to 0.59 and 0.35 to 0.41). That night, with the node read in one module call inside
the node check (two tasks per node, 139 workers at N=64): N=8 0.40 to 0.45 and N=64 0.24 to 0.26 (six
rounds in two hours; the code before 0.45 to 0.53 and 0.27 to 0.29), marginal 0.22 to 0.24, all
CPU-s per node at N=64 0.89 to 0.96 instead of 1.16 to 1.24, peak RSS 124 MiB instead of 106.
Earlier rounds (a wrapper summed the modules' CPU and the
controller was the rest): four read modules and two index reads per node, N=64 1.77 controller
CPU-s per node; one plan_facts call and each index read once per run, 0.72.

    .venv/bin/python benchmarks/bench_plan.py [N ...] [--rounds R]    # default 8 64, one round
    .venv/bin/python benchmarks/bench_plan.py --keep DIR 8   # keep each run's plan_dir under DIR
    .venv/bin/python benchmarks/bench_plan.py --stages 4 64  # plan.yml imported 4 times, as site.yml does

--keep writes the plan directory (plan.json, summary.txt, discovery/) with what differs between two
runs of the same inputs replaced: this run's temporary directory, the repository server's port, the
checkout's path and the records' ``stored_at`` time. Two checkouts' plans then compare with
``diff -r``: the plan of a change must be byte-identical to the one before it.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import controller_cpu  # benchmarks/controller_cpu.py
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SIZES = [8, 64]
LAYOUTS = ["dgx-h200-8x8", "pcie-l40s-4x2", "roce-vlan-gid"]
DRIVER = "580.95.05"
# The node groups as the plan names them: rails 2-7 exist on dgx-h200-8x8 only, rail 1 also on
# pcie-l40s-4x2 (roce-vlan-gid's second NIC has no IPv4 RoCE v2 GID: min_rails 1 plans it with one).
EIGHT_RAILS = "h200-connectx-7-8r"
TWO_RAILS = "l40s-connectx-6-dx-2r"
DRIVER_LINE = f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  (lab@lab)\n"


def load_snapshots():
    spec = importlib.util.spec_from_file_location("snapshots_build", REPO / "lab" / "snapshots" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_sysroot(snapshots, work: Path, index: int) -> str:
    """Node ``index``'s hardware: a snapshot with the open driver loaded, as the lab's modprobe makes it."""
    name = f"{LAYOUTS[index % len(LAYOUTS)]}@{index + 1}"
    root = Path(snapshots.materialize(name, str(work / "sysroots" / name.replace("@", "_"))))
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "driver" / "nvidia" / "version").write_text(DRIVER_LINE)
    (root / "sys" / "module" / "nvidia").mkdir(parents=True, exist_ok=True)
    (root / "sys" / "module" / "nvidia" / "version").write_text(DRIVER + "\n")
    return str(root)


def serve(directory: Path) -> str:
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args):
        pass


def inventory(work: Path, sysroots, repo_url: str, fingerprint: str, python: str) -> Path:
    lab = REPO / "inventory" / "lab" / "group_vars"
    fabric = yaml.safe_load((lab / "all" / "fabric.yml").read_text())["gpufabric_fabric"]
    cluster = yaml.safe_load((lab / "all" / "cluster.yml").read_text())
    hosts = {
        f"gpu-{i:04d}": {"gpufabric_sysroot": root, "ansible_connection": "local", "ansible_python_interpreter": python}
        for i, root in enumerate(sysroots)
    }
    data = {
        "all": {
            "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
            "children": {"gpu_nodes": {"hosts": hosts}},
            "vars": {
                "gpufabric_fabric": fabric,
                "gpufabric_nccl_version": "2.27.3",
                "gpufabric_k8s_mode": "render",
                "gpufabric_k8s_render_dir": str(work / "rendered"),
                "gpufabric_instance": "bench",
                "plan_dir": str(work / "plan"),
                "gpufabric_rails": dict(
                    cluster["gpufabric_rails"],
                    min_rails=1,
                    rails=[{"rail": 0}, {"rail": 1, "node_groups": [EIGHT_RAILS, TWO_RAILS]}]
                    + [{"rail": r, "node_groups": [EIGHT_RAILS]} for r in range(2, 8)],
                ),
                "gpufabric_cluster_cidrs": cluster["gpufabric_cluster_cidrs"],
                "network_operator_chart_path": str(REPO / "lab" / "charts" / "network-operator"),
                "gpu_operator_chart_path": str(REPO / "lab" / "charts" / "gpu-operator"),
                "gpufabric_gpu_driver": {
                    "managed_by": "host",
                    "version": DRIVER,
                    "kernel_module": "open",
                    "packages": ["nvidia-kernel-open-dkms", "nvidia-driver-cuda"],
                },
                "gpu_driver_repo_url": f"{repo_url}/cuda/debian12/x86_64",
                "gpu_driver_repo_key_fingerprints": [fingerprint],
                "doca_ofed_version": "2.9.1",
                "doca_ofed_repo_base_url": f"{repo_url}/doca",
                "doca_ofed_repo_os": "debian12",
                "doca_ofed_gpg_key_fingerprints": [fingerprint],
                "roce_disable_acs_redirect": True,
                # every node is this machine, which may run without systemd (a container)
                "plan_require_systemd": False,
            },
        }
    }
    path = work / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def stages_playbook(work: Path, stages: int) -> Path:
    """plans.yml importing playbooks/plan.yml ``stages`` times, as site.yml imports it once per stage."""
    path = work / "plans.yml"
    imports = [
        {"name": f"stage {i + 1}", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "plan.yml")}
        for i in range(stages)
    ]
    path.write_text(yaml.safe_dump(imports))
    return path


def run_plan(work: Path, hosts: Path, plays: str = "playbooks/plan.yml") -> dict:
    shutil.rmtree(work / "plan", ignore_errors=True)
    run_tmp = Path(tempfile.mkdtemp(prefix="gf."))  # a short TMPDIR: ansible-core's RPC socket path
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", TMPDIR=str(run_tmp))
    env["ANSIBLE_LOCAL_TEMP"] = str(work / "ansible-tmp")
    cpu_log = work / "controller-cpu.log"
    cpu_log.unlink(missing_ok=True)
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    argv = [sys.executable, str(HERE / "controller_cpu.py"), str(cpu_log), playbook]
    argv += ["-i", str(hosts), plays]
    with open(work / "plan.log", "w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    shutil.rmtree(run_tmp, ignore_errors=True)
    if proc.returncode != 0:
        sys.stdout.write((work / "plan.log").read_text()[-4000:])
        raise SystemExit(f"ansible-playbook failed (rc {proc.returncode})")
    controller = controller_cpu.read(str(cpu_log))
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,
        "controller": controller["main"] + controller["workers"],
        "main": controller["main"],
        "workers": controller["worker_count"],
    }


def keep(work: Path, repo_url: str, dest: Path) -> None:
    """The plan directory, with the run's own strings replaced (see the docstring)."""
    for path in sorted((work / "plan").rglob("*")):
        if path.is_file():
            text = path.read_text().replace(str(work), "WORK").replace(repo_url, "REPO").replace(str(REPO), "CHECKOUT")
            text = re.sub(r'"stored_at": "[^"]*"', '"stored_at": "STORED_AT"', text)
            out = dest / path.relative_to(work / "plan")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=SIZES)
    parser.add_argument("--keep", type=Path, help="copy each run's plan_dir to KEEP/N")
    parser.add_argument("--rounds", type=int, default=1, help="runs per size (the figures of each are printed)")
    parser.add_argument(
        "--stages",
        type=int,
        default=1,
        help="import playbooks/plan.yml this many times in one run, as site.yml does (the later ones plan nothing)",
    )
    args = parser.parse_args()
    snapshots = load_snapshots()
    with tempfile.TemporaryDirectory(prefix="bench-plan.") as tmp:
        work = Path(tmp)
        subprocess.run(
            [sys.executable, str(REPO / "lab" / "repo" / "build.py"), "--out", str(work / "repo")],
            check=True,
            capture_output=True,
        )
        repo_url = serve(work / "repo")
        fingerprint = (work / "repo" / "signing-key.fpr").read_text().strip()
        sysroots = [node_sysroot(snapshots, work, i) for i in range(max(args.sizes))]
        load = os.getloadavg()[0]
        plays = "playbooks/plan.yml" if args.stages <= 1 else str(stages_playbook(work, args.stages))
        results = {}
        for n in args.sizes:
            hosts = inventory(work, sysroots[:n], repo_url, fingerprint, sys.executable)
            results[n] = []
            for _round in range(args.rounds):
                r = run_plan(work, hosts, plays)
                results[n].append(r)
                if args.keep:
                    keep(work, repo_url, args.keep / str(n))
                staged = f"stages {args.stages}, " if args.stages > 1 else ""
                print(
                    f"{staged}N={n}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s ({r['cpu'] / n:.2f} per node), "
                    f"controller {r['controller']:.1f} s ({r['controller'] / n:.2f} per node; main process "
                    f"{r['main']:.1f} s, {r['workers']} workers), modules and their shells "
                    f"{r['cpu'] - r['controller']:.1f} s, peak RSS {r['rss']:.0f} MiB",
                    flush=True,
                )
        sizes = sorted(results)
        if len(sizes) >= 2:
            a, b = sizes[0], sizes[-1]
            for i, (ra, rb) in enumerate(zip(results[a], results[b])):
                controller = (rb["controller"] - ra["controller"]) / (b - a)
                everything = (rb["cpu"] - ra["cpu"]) / (b - a)
                print(
                    f"marginal CPU-s per node (N={a}..{b}, round {i + 1}): "
                    f"controller {controller:.2f}, all {everything:.2f}"
                )
        print(f"load average at the start: {load:.2f} on {os.cpu_count()} CPUs")
        print(json.dumps({str(n): r for n, r in results.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
