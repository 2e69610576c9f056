"""Benchmark: the cluster layer (playbooks/cluster.yml) at scale, on a private lab control plane.

Prints figures, never fails on timing. For N = 64, 512 and 4,096 simulated GPU nodes (arguments
override), in node groups of different hardware (half dgx-h200-8x8, half pcie-l40s-4x2: kwok Nodes
registered from those snapshots, as lab/cluster/nodes.py registers the lab's nodes):

- the nodes' records are stored in the plan directory (plan_dir/discovery/) the way a sliced run
  leaves them: playbooks/plan.yml runs once on one local-connection node per snapshot (the
  snapshot materialised, the NVIDIA driver loaded by the lab's modprobe shim), and its records
  are saved again under every other node's name (the node name is their only per-node field);
- `ansible-playbook playbooks/cluster.yml --limit localhost` in apply mode against the private API
  server, as the collection's least-privilege identity: the first run, then a no-op rerun.
  For each: wall time; CPU-s of the whole ansible-playbook process tree and its peak RSS (the
  largest single process: ru_maxrss), both from wait4() of that process; the play recap's
  changed count; the run's API requests by verb and its writes by resource, from the audit log the
  lab's API server keeps of the collection's identity (lab/controlplane/audit-policy.yaml); and,
  beside them, the writes every client made meanwhile (apiserver_request_total: kwok, the
  controllers and the lab's operator stand-in write on their own); the slowest tasks
  (ansible.posix.profile_tasks).

The CRDs are the upstream ones (LAB_CRDS_DIR, else the shared schemas beside the checkout), else
the lab's permissive stand-ins; readiness comes from the lab's operator stand-in
(lab/cluster/play_operator.py), as in the lab. Each N gets a fresh cluster, removed at the end;
the logs of every run are kept in .lab/bench/cluster-layer/.

One round on the 2-CPU development machine, shared (load average 9 to 22; every figure in
docs/performance.md, "The cluster layer at scale"): N=64 first 169.5 s / 60.2 CPU-s, rerun 191.0 s /
63.1 CPU-s with 20 PATCHes (before k8s_apply skipped unchanged objects); N=512 first 251.3 s / 70.2
CPU-s; N=4,096 no-op rerun 323.9 s / 108.7 CPU-s, 172 MiB, no write. The 4,096 first run failed in
the GPU Operator's wait: the lab's operator stand-in writes the ClusterPolicy status only after
advertising RDMA resources on every Node. On 2026-12-07, with the prune in the apply call and the
stand-in writing statuses beside its Node pass, on the machine alone: N=4,096 first run 132.7 and
134.7 s / 63.0 and 64.1 CPU-s, no-op rerun 86.0 and 89.3 s / 53.3 and 54.3 CPU-s with no write,
189 MiB at most; the machine's two CPUs were busy throughout, two thirds of it with the control plane.
Later that day, with the cluster roles' argument check left to the plan, the report and the cluster
plan no longer reading the variables of nodes outside the run, and the simulated kubelets renewing
their Leases every 40 s (NODE_LEASE_SECONDS below) instead of 10 s: no-op rerun 58.8, 68.7 and 75.1 s /
42.8, 50.5 and 53.0 CPU-s, no write; first run 95.0, 135.2 and 126.2 s / 50.0, 61.6 and 58.6 CPU-s.

    .venv/bin/python benchmarks/bench_cluster_layer.py [N ...]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import private_cluster as pc  # benchmarks/private_cluster.py
from machine_cpu import machine_busy  # benchmarks/machine_cpu.py

sys.path.insert(0, str(pc.REPO / "tests"))
from upstream_crds import UPSTREAM_CRDS  # tests/upstream_crds.py

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node_records import DiscoveryStore

REPO = pc.REPO
SIZES = [64, 512, 4096]
# Node groups of different hardware: (inventory group, snapshot); the nodes are shared out in turn.
GROUPS = (("h200", "dgx-h200-8x8"), ("l40s", "pcie-l40s-4x2"))
H200_GROUP = "h200-connectx-7-8r"  # the node group the plan makes of the dgx-h200-8x8 servers
DRIVER = "open 580.95.05"  # what the lab's nodes have (inventory/lab group_vars/gpu_nodes)
LOGS = REPO / ".lab" / "bench" / "cluster-layer"
NODE_LEASE_VARIABLE = "GPUFABRIC_LAB_NODE_LEASE_SECONDS"  # lab/controlplane/controlplane.py
NODE_LEASE_SECONDS = 160
RECAP = re.compile(r"^localhost\s+: ok=\d+\s+changed=(?P<changed>\d+)\s+unreachable=\d+\s+failed=(?P<failed>\d+)", re.M)
PROFILE_LINE = re.compile(r"^(?P<name>.*?) -+ (?P<seconds>\d+\.\d+)s$")


def crds_dir(tmp: Path) -> Path:
    if UPSTREAM_CRDS.is_dir():
        return UPSTREAM_CRDS
    out = tmp / "crds"
    subprocess.run([sys.executable, str(REPO / "lab" / "crds" / "permissive.py"), str(out)], check=True)
    return out


def variables(cluster: pc.Cluster, crds: Path, plan_dir: Path) -> Dict[str, Any]:
    """The cluster's variables: the lab's fabric, NCCL version and mode (inventory/lab), and the rest for N nodes."""
    helm = str(REPO / ".tools" / "bin" / "helm")
    lab = yaml.safe_load((REPO / "inventory" / "lab" / "group_vars" / "all" / "fabric.yml").read_text())
    return {
        **{key: lab[key] for key in ("gpufabric_fabric", "gpufabric_nccl_version", "gpufabric_k8s_mode")},
        "gpufabric_kubeconfig": str(cluster.kubeconfig),
        "gpufabric_rails": {
            # 8 rails of 4,096 nodes x 16 addresses each
            "supernet": "172.16.0.0/12",
            "rail_prefix": 15,
            "block_size": 16,
            "nad_namespace": "gpu-workloads",
            # The L40S servers have rails 0 and 1; rails 2-7 are the H200 servers' alone.
            "rails": [{"rail": r} for r in range(2)] + [{"rail": r, "node_groups": [H200_GROUP]} for r in range(2, 8)],
        },
        "gpufabric_cluster_cidrs": {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
        # The host layer is not measured: no DOCA-OFED repository or GDS packages to plan.
        "gpufabric_doca_ofed_enabled": False,
        "gpufabric_gds_enabled": False,
        "plan_require_systemd": False,  # the seed "nodes" run on this controller
        "plan_dir": str(plan_dir),
        "network_operator_chart_path": str(REPO / "lab" / "charts" / "network-operator"),
        "network_operator_helm_binary": helm,
        "network_operator_crds_dir": str(crds),
        "network_operator_wait_timeout": 120,
        "network_operator_wait_delay": 1,
        "gpu_operator_chart_path": str(REPO / "lab" / "charts" / "gpu-operator"),
        "gpu_operator_helm_binary": helm,
        "gpu_operator_crds_dir": str(crds),
        "gpu_operator_wait_timeout": 120,
        "gpu_operator_wait_delay": 1,
    }


def inventory(path: Path, common: Dict[str, Any], groups: Dict[str, List[str]], hostvars: Dict[str, Dict]) -> Path:
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    doc = {
        "all": {
            "vars": common,
            "hosts": {"localhost": local},
            "children": {
                "gpu_nodes": {
                    "vars": local,
                    "children": {
                        g: {"hosts": {h: hostvars.get(h) for h in hosts}} for g, hosts in groups.items() if hosts
                    },
                }
            },
        }
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def load_driver(sysroot: Path, lab_root: Path) -> None:
    """What lab/prepare.yml does on a lab node: the lab's modprobe shim loads the NVIDIA driver into
    the hardware tree."""
    etc = lab_root / "etc" / "gpufabric-lab"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "nvidia-driver").write_text(DRIVER + "\n")
    (etc / "sysroot").write_text(f"{sysroot}\n")
    subprocess.run(
        [sys.executable, str(REPO / "lab" / "simulators" / "modprobe"), "nvidia"],
        env={"GPUFABRIC_LAB_ROOT": str(lab_root), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
        capture_output=True,
    )


def playbook(args: List[str], log: Path, env: Dict[str, str]) -> Dict[str, Any]:
    """ansible-playbook ARGS: wall, CPU-s and peak RSS of its process tree (wait4), recap, log."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "ansible-playbook"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text()
    recap = RECAP.search(text)
    return {
        "rc": proc.returncode,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "changed": int(recap.group("changed")) if recap else None,
        "failed": int(recap.group("failed")) if recap else None,
        "slowest": [m.groups() for m in map(PROFILE_LINE.match, text.splitlines()) if m][:6],
        "report": [
            float(m.group("seconds"))
            for m in map(PROFILE_LINE.match, text.splitlines())
            if m and m.group("name").strip() == "Render the report"
        ],
    }


def ansible_env(cluster: pc.Cluster) -> Dict[str, str]:
    cfg = pc.REPO / "ansible.cfg"
    enabled = ""
    for line in cfg.read_text().splitlines():
        if line.strip().startswith("callbacks_enabled"):
            enabled = line.split("=", 1)[1].strip()
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(cfg),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_CALLBACKS_ENABLED=",".join(filter(None, ["ansible.posix.profile_tasks", enabled])),
        PROFILE_TASKS_SORT_ORDER="descending",
        PROFILE_TASKS_TASK_OUTPUT_LIMIT="all",
        K8S_AUTH_KUBECONFIG=str(cluster.kubeconfig),
    )


def seed_records(cluster, tmp: Path, common, env, names: Dict[str, List[str]]) -> Dict[str, str]:
    """playbooks/plan.yml on the first node of each group (local connection, on its snapshot): their
    records land in plan_dir/discovery/. Returns {group: seed host}."""
    seeds = {g: hosts[0] for g, hosts in names.items() if hosts}
    hostvars = {}
    for group, snapshot in GROUPS:
        if group in seeds:
            root = tmp / "sysroots" / snapshot
            load_driver(root, tmp / "lab-root" / group)
            hostvars[seeds[group]] = {"gpufabric_sysroot": str(root)}
    inv = inventory(tmp / "seed-inventory.yml", common, {g: [h] for g, h in seeds.items()}, hostvars)
    res = playbook(["-i", str(inv), "playbooks/plan.yml"], LOGS / "seed-plan.log", env)
    if res["rc"] != 0:
        raise SystemExit(f"the seed plan failed (rc {res['rc']}); see {LOGS / 'seed-plan.log'}")
    return seeds


def clone_records(plan_dir: Path, seeds: Dict[str, str], names: Dict[str, List[str]]) -> None:
    """Every other node's record: its group's seed record under its own name."""
    store = DiscoveryStore(str(plan_dir / "discovery"))
    for group, hosts in names.items():
        record = store.load(seeds[group])
        if record is None:
            raise SystemExit(f"the seed plan stored no record for {seeds[group]}")
        record.pop("stored_at", None)
        if json.dumps({k: v for k, v in record.items() if k != "k8s_node_name"}).count(seeds[group]):
            raise SystemExit(f"{seeds[group]}'s record names it outside k8s_node_name: cloning it would be wrong")
        for host in hosts[1:]:
            store.save(host, dict(record, k8s_node_name=host))


def measure(cluster: pc.Cluster, what: str, args: List[str], log: Path, env) -> Dict[str, Any]:
    all_before, mark = pc.request_counts(cluster), pc.audit_mark(cluster)
    busy_before = machine_busy()[0]
    res = playbook(args, log, env)
    busy = machine_busy()[0] - busy_before
    mine = pc.audited(cluster, mark)
    everyone = pc.request_counts(cluster)
    everyone.subtract(all_before)
    others = pc.writes(everyone)
    others.subtract(pc.writes(mine))
    print(
        f"  {what:11s} rc {res['rc']}: {res['wall']:7.1f} s wall, {res['cpu']:7.1f} CPU-s, peak RSS "
        f"{res['rss_mib']:.0f} MiB; changed={res['changed']}\n"
        f"      the machine's CPUs ({os.cpu_count()}) were busy {busy:.1f} CPU-s meanwhile: "
        f"{max(0.0, busy - res['cpu']):.1f} of them not the run's (the lab's control plane, kwok, the stand-in, "
        "other jobs)\n"
        f"      its requests: {pc.show(pc.by_verb(mine))}\n"
        f"      its writes (reviews, which store nothing, left out): {pc.show(pc.writes(mine))}\n"
        f"      others' writes meanwhile (kwok, controllers, operator stand-in): {pc.show(+others)}"
    )
    print(f"      the report rendered in {', '.join(f'{x:.1f} s' for x in res['report']) or '?'}; the slowest tasks:")
    for name, seconds in res["slowest"]:
        print(f"      {float(seconds):7.1f} s  {name.strip()[:110]}")
    return res


def one_size(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cluster-layer-") as tmpdir:
        tmp = Path(tmpdir)
        names: Dict[str, List[str]] = {group: [] for group, _snapshot in GROUPS}
        pairs: List[Tuple[str, str]] = []
        for i in range(n):
            group, snapshot = GROUPS[i % len(GROUPS)]
            host = f"{group}-{i:04d}"
            names[group].append(host)
            pairs.append((host, snapshot))
        with pc.running(tmp) as cluster:
            crds = crds_dir(tmp)
            cluster.kubectl("apply", "--server-side", "-f", str(crds))
            cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            t0 = time.perf_counter()
            pc.register(cluster, pairs, tmp / "sysroots")
            print(
                f"N={n}: registered {n} kwok Nodes ({', '.join(f'{len(h)} {g}' for g, h in names.items())}) "
                f"in {time.perf_counter() - t0:.0f} s"
            )
            pc.settle(cluster)
            plan_dir = tmp / "plan"
            common = variables(cluster, crds, plan_dir)
            env = ansible_env(cluster)
            t0 = time.perf_counter()
            seeds = seed_records(cluster, tmp, common, env, names)
            clone_records(plan_dir, seeds, names)
            print(
                f"  stored records: plan.yml on {', '.join(seeds.values())} and {n - len(seeds)} clones "
                f"in {time.perf_counter() - t0:.0f} s"
            )
            inv = inventory(tmp / "inventory.yml", common, names, {})
            args = ["-i", str(inv), "playbooks/cluster.yml", "--limit", "localhost"]
            for what in ("first run", "no-op rerun"):
                res = measure(cluster, what, args, LOGS / f"{n}-{what.replace(' ', '-')}.log", env)
                if res["rc"] != 0:
                    print(f"  {what} failed: see {LOGS / (str(n) + '-' + what.replace(' ', '-') + '.log')}")
                    break


def main(argv) -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    # The simulated kubelets renew their Leases every 40 s instead of a kubelet's 10 s (unless the
    # environment sets it): at 4,096 Nodes a kubelet's rate is some 410 Lease writes a second, which the
    # lab's API server and etcd serve on this machine's CPUs, beside the run being measured; on a real
    # cluster the API server runs elsewhere. The run's own CPU-s do not depend on it; its wall time does.
    lease = os.environ.setdefault(NODE_LEASE_VARIABLE, str(NODE_LEASE_SECONDS))
    print(f"kwok renews each Node's Lease every {int(lease) / 4:g} s ({NODE_LEASE_VARIABLE}={lease}; a kubelet: 10 s)")
    for n in [int(a) for a in argv] or SIZES:
        one_size(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
