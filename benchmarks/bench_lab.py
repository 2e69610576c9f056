#!/usr/bin/env python
"""Benchmark: the lab's main job (site.yml) and the transports that reach the lab nodes.

Needs root, podman, the lab image and the toolchain (`make bench` builds what is missing). It
replaces the running lab (make lab's nodes and API double) and leaves it down. Prints:

1. Per-task cost of each transport (mitogen, ssh, podman) on two lab nodes: a play of 41 no-op
   tasks (stat and command in turn); per task = the profile_tasks time of tasks 2..41 / 40, so
   start-up and connection set-up are not counted; the median of BENCH_LAB_ROUNDS rounds; on the
   toolchain's ansible-core and, beside it, on the oldest supported one (tests/matrix/cores.txt;
   BENCH_LAB_OLDEST_CORE=0 leaves it out).
2. make lab on two nodes over the lab's transport (gpufabric_lab_connection), BENCH_LAB_ROUNDS
   times on fresh nodes: nodes + prepare, the first site.yml run, a no-op rerun (its changed count
   and its share of the first run); the median of the rounds and every round.
3. The no-op rerun of site.yml over every transport: wall time, tasks, seconds per task.
4. The slowest tasks of a no-op rerun, per role (ansible.posix.profile_tasks).
5. BENCH_LAB_LARGE nodes (default 16; 0 skips it): nodes + prepare, the first site.yml run and
   its ratio to two nodes, a no-op rerun, and memory: the nodes' containers (cgroup usage, from
   podman stats) and the controller's Ansible process tree (peak RSS, shared pages counted
   once per process).

Every site.yml run also prints where the CPU went: the controller's Ansible process tree (user +
sys of the waited processes), the lab nodes' containers (their cgroups' CPU usage) and the rest
of the machine (the lab's control plane, the kernel), from /proc/stat. On a controller that also
hosts the nodes, that total over the CPU count is the least wall time the run can take: the
16-node line prints it as a multiple of the 2-node run. It also prints the CPU time the hypervisor
took away while the machine had work (steal): on a shared virtual machine, the same run slows
with it, which explains rounds that differ with nothing else changed.

Figures only: it never fails on timing; it exits 1 when a run fails or a rerun changes something.
Logs of every run are kept in .lab/bench/. BENCH_LAB_TRANSPORTS picks the transports
(default "mitogen ssh podman"), BENCH_LAB_RERUN_TRANSPORTS those of the no-op reruns (default:
the same).
"""

from __future__ import annotations

import configparser
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from machine_cpu import machine_busy  # benchmarks/machine_cpu.py

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "lab" / "lab.sh"
LOGS = REPO / ".lab" / "bench"
TRANSPORTS = os.environ.get("BENCH_LAB_TRANSPORTS", "mitogen ssh podman").split()
RERUN_TRANSPORTS = os.environ.get("BENCH_LAB_RERUN_TRANSPORTS", " ".join(TRANSPORTS)).split()
ROUNDS = int(os.environ.get("BENCH_LAB_ROUNDS", "3"))
LARGE = int(os.environ.get("BENCH_LAB_LARGE", "16"))
NOOP_TASKS = 40
RECAP = re.compile(
    r"^(?P<host>\S+)\s+: ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)"
)
PROFILE = re.compile(r"^(?P<name>.*?) -* ?(?P<seconds>\d+\.\d+)s$")


def configured_callbacks() -> list:
    """The callbacks ansible.cfg enables: the profiled runs add profile_tasks to them, not in their place."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "ansible.cfg")
    return [c.strip() for c in cfg.get("defaults", "callbacks_enabled", fallback="").split(",") if c.strip()]


PROFILE_ENV = {
    "ANSIBLE_CALLBACKS_ENABLED": ",".join(["ansible.posix.profile_tasks", *configured_callbacks()]),
    "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "all",
    "PROFILE_TASKS_SORT_ORDER": "descending",
}


class RunFailed(Exception):
    pass


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def default_transport() -> str:
    out = subprocess.run(
        ["bash", "-c", "source lab/common.sh && lab_connection"], cwd=REPO, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def process_tree_rss(root_pid: int) -> int:
    """Sum of the RSS (bytes) of root_pid and all its descendants, read from /proc."""
    children: dict = {}
    rss: dict = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/statm") as fh:
                pages = int(fh.read().split()[1])
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def lab_containers() -> list:
    out = subprocess.run(
        ["podman", "ps", "--filter", "label=io.gpufabric.lab=1", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return out.split()


def container_cpu(name: str) -> float:
    """CPU-seconds the container's cgroup has used (cgroup v2 cpu.stat, or v1 cpuacct.usage)."""
    pid = subprocess.run(
        ["podman", "inspect", "--format", "{{.State.Pid}}", name], capture_output=True, text=True, check=False
    ).stdout.strip()
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return 0.0
    for line in lines:
        _num, controllers, path = line.split(":", 2)
        if controllers == "":
            stat = Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.stat"
            for row in stat.read_text().splitlines() if stat.exists() else []:
                if row.startswith("usage_usec "):
                    return int(row.split()[1]) / 1e6
        elif "cpuacct" in controllers.split(","):
            usage = Path("/sys/fs/cgroup") / controllers / path.lstrip("/") / "cpuacct.usage"
            if usage.exists():
                return int(usage.read_text()) / 1e9
    return 0.0


def nodes_cpu() -> float:
    return sum(container_cpu(name) for name in lab_containers())


def run(name: str, argv: list, env: dict | None = None, sample_memory: bool = False, measure_cpu: bool = False) -> dict:
    """Run a command with its output in LOGS/<name>.log; return wall time, recap, peak RSS and,
    with measure_cpu, the CPU-seconds of the run's process tree, of the lab nodes and of the machine."""
    LOGS.mkdir(parents=True, exist_ok=True)
    logfile = LOGS / f"{name}.log"
    full_env = dict(os.environ, **(env or {}))
    peak = [0]
    # The nodes' cgroups are read with podman (child processes that use CPU): before the other two
    # readings at the start and after them at the end, so that neither counts the bench's own calls.
    nodes0 = nodes_cpu() if measure_cpu else 0.0
    usage0, (busy0, stolen0) = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy()
    start = time.perf_counter()
    with open(logfile, "w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sampler():
            while not done.wait(0.5):
                peak[0] = max(peak[0], process_tree_rss(proc.pid))

        thread = threading.Thread(target=sampler, daemon=True)
        if sample_memory:
            thread.start()
        rc = proc.wait()
        done.set()
    wall = time.perf_counter() - start
    usage, (busy, stolen) = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy()
    cpu = {
        "controller": usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime,
        "machine": busy - busy0,
        "stolen": stolen - stolen0,
        "nodes": nodes_cpu() - nodes0 if measure_cpu else 0.0,
    }
    text = logfile.read_text(errors="replace")
    if rc != 0:
        tail = "\n".join(text.splitlines()[-25:])
        raise RunFailed(f"{' '.join(map(str, argv))} failed (exit {rc}); log: {logfile}\n{tail}")
    hosts = {m["host"]: m.groupdict() for m in map(RECAP.match, text.splitlines()) if m}
    return {
        "wall": wall,
        "tasks": sum(1 for line in text.splitlines() if line.startswith(("TASK [", "RUNNING HANDLER ["))),
        "changed": sum(int(h["changed"]) for h in hosts.values()),
        "hosts": hosts,
        "text": text,
        "peak_rss": peak[0],
        "cpu": cpu,
        "log": logfile,
    }


def lab(name: str, *args: str, transport: str, extra_env: dict | None = None, **kw) -> dict:
    env = {"GPUFABRIC_LAB_CONNECTION": transport, **(extra_env or {})}
    log(f"{name}: lab/lab.sh {' '.join(args)} over {transport}")
    return run(name, [str(LAB), *args], env=env, measure_cpu=args[0] == "site", **kw)


def profile(text: str) -> list:
    """(name, seconds) of every task in a profile_tasks recap."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("TASKS RECAP"):
            inside = True
            continue
        if inside:
            m = PROFILE.match(line.strip())
            if m:
                rows.append((m["name"], float(m["seconds"])))
    return rows


def noop_playbook(path: Path, tasks: int) -> None:
    body = []
    for i in range(tasks):
        if i % 2 == 0:
            body.append({"name": f"Stat {i}", "ansible.builtin.stat": {"path": "/etc/hostname"}})
        else:
            body.append({"name": f"Command {i}", "ansible.builtin.command": "true", "changed_when": False})
    path.write_text(yaml.safe_dump([{"name": "No-op", "hosts": "gpu_nodes", "gather_facts": False, "tasks": body}]))


def bench_cores() -> list:
    """(label, extra PATH or None) of each ansible-core the per-task cost is measured on: the
    toolchain's (requirements.txt, the newest) and the oldest supported one (the first line of
    tests/matrix/cores.txt, its venv made by lab/core_venv.sh), so the move between them shows;
    BENCH_LAB_OLDEST_CORE=0 measures the newest alone."""
    cores = [(f"ansible-core {core_version(REPO / '.venv')}", None)]
    if os.environ.get("BENCH_LAB_OLDEST_CORE", "1") != "0":
        lines = (REPO / "tests" / "matrix" / "cores.txt").read_text().splitlines()
        oldest = next(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))
        subprocess.run([str(REPO / "lab" / "core_venv.sh"), oldest], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        cores.append((f"ansible-core {oldest}", str(REPO / ".lab" / "cores" / oldest / "bin")))
    return cores


def core_version(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import ansible.release as r; print(r.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def per_task_costs(transports: list, cores: list) -> dict:
    """Seconds per no-op task on the lab's two nodes, per (transport, core label), one figure per
    round (transports and cores interleaved): the profile_tasks times of a play's tasks after its
    first one, so start-up and connection set-up are not counted."""
    costs: dict = {(t, label): [] for t in transports for label, _path in cores}
    with tempfile.TemporaryDirectory(prefix="gpufabric-bench.") as tmp:
        play = Path(tmp) / "noop.yml"
        noop_playbook(play, NOOP_TASKS + 1)
        for rnd in range(ROUNDS):
            for transport in transports:
                for label, path in cores:
                    env = {**transport_env(transport), **PROFILE_ENV, "PROFILE_TASKS_SORT_ORDER": "none"}
                    if path:
                        env["PATH"] = path + os.pathsep + os.environ["PATH"]
                    argv = ["ansible-playbook", "-i", "inventory/lab", "-e", f"gpufabric_lab_connection={transport}"]
                    name = f"noop-{transport}-{label.split()[-1]}-r{rnd}"
                    timed = profile(run(name, [*argv, str(play)], env=env)["text"])
                    cost = sum(seconds for _name, seconds in timed[1:]) / (len(timed) - 1)
                    costs[(transport, label)].append(cost)
                    log(f"per-task {transport} on {label} round {rnd + 1}: {cost:.3f} s")
    return costs


def transport_env(transport: str) -> dict:
    """ANSIBLE_STRATEGY(_PLUGINS) and ANSIBLE_HOST_KEY_CHECKING as lab/common.sh sets them for a transport."""
    out = subprocess.run(
        [
            "bash",
            "-c",
            "source lab/common.sh && lab_connection_env && "
            'env | grep -E "^ANSIBLE_(STRATEGY|HOST_KEY_CHECKING)" || true',
        ],
        cwd=REPO,
        env=dict(os.environ, GPUFABRIC_LAB_CONNECTION=transport),
        capture_output=True,
        text=True,
        check=True,
    )
    env = dict(line.split("=", 1) for line in out.stdout.splitlines())
    env.setdefault("ANSIBLE_STRATEGY", "linear")
    env["ANSIBLE_STRATEGY_PLUGINS"] = env.get("ANSIBLE_STRATEGY_PLUGINS", "")
    return env


def large_lab(count: int) -> tuple:
    """An inventory for `count` nodes, beside inventory/lab's depth (its group_vars find the
    checkout at inventory_dir/../..)."""
    inv = REPO / ".lab" / f"bench-inventory-{count}"
    shutil.rmtree(inv, ignore_errors=True)
    inv.mkdir(parents=True)
    (inv / "group_vars").symlink_to(Path("..") / ".." / "inventory" / "lab" / "group_vars")
    names = [f"gpu-node-{i:02d}" for i in range(1, count + 1)]
    nodes = {n: {"gpufabric_lab_snapshot": f"dgx-h200-8x8@{i}"} for i, n in enumerate(names, 1)}
    controller = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    hosts = {"all": {"children": {"gpu_nodes": {"hosts": nodes}}, "hosts": {"localhost": controller}}}
    (inv / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts, sort_keys=False))
    # lab/lab.sh registers the inventory's GPU nodes as the cluster's Nodes, from their snapshots.
    env = {"LAB_NODES": " ".join(names), "LAB_INVENTORY": str(inv)}
    return env, names


def nodes_memory(names: list) -> int:
    """Memory the nodes' containers use (bytes, podman stats: cgroup usage without page cache)."""
    out = subprocess.run(
        ["podman", "stats", "--no-stream", "--no-reset", "--format", "{{.Name}} {{.MemUsage}}", *names],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    units = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
    total = 0.0
    for line in out.splitlines():
        m = re.match(r"^\S+\s+([\d.]+)\s*([A-Za-z]+)\s*/", line)
        if m:
            total += float(m[1]) * units.get(m[2], 1)
    return int(total)


def cpu_line(result: dict) -> str:
    cpu = result["cpu"]
    rest = cpu["machine"] - cpu["controller"] - cpu["nodes"]
    return (
        f"controller {cpu['controller']:.0f} s, nodes {cpu['nodes']:.0f} s, rest of the machine {rest:.0f} s "
        f"(CPU-seconds): {cpu['machine'] / result['wall']:.2f} of {os.cpu_count()} CPUs busy on average; "
        f"{cpu['stolen']:.0f} CPU-s stolen by the hypervisor"
    )


def noop_check(name: str, result: dict) -> None:
    if result["changed"]:
        raise RunFailed(f"{name}: the rerun changed {result['changed']} things (log: {result['log']})")


def main() -> int:
    os.environ.setdefault("CONTAINERS_CONF", str(REPO / ".lab" / "containers.conf"))
    default = default_transport()
    profile_env = PROFILE_ENV
    try:
        rounds = []
        for rnd in range(ROUNDS):
            lab(f"down-r{rnd}", "down", transport=default)
            start2 = lab(f"start-2-r{rnd}", "start", transport=default)
            first2 = lab(f"site-2-first-r{rnd}", "site", transport=default, extra_env=profile_env, sample_memory=True)
            noop2 = lab(f"site-2-noop-r{rnd}", "site", transport=default, extra_env=profile_env)
            noop_check("site.yml rerun on 2 nodes", noop2)
            rounds.append({"start": start2, "first": first2, "noop": noop2})
        # The round whose first run is the median stands for the rest (its tasks, CPU and profile).
        middle = sorted(rounds, key=lambda r: r["first"]["wall"])[len(rounds) // 2]
        first2, noop2 = middle["first"], middle["noop"]
        first2_wall = statistics.median(r["first"]["wall"] for r in rounds)
        reruns = {default: rounds[-1]["noop"]}
        for transport in RERUN_TRANSPORTS:
            if transport != default:
                reruns[transport] = lab(f"site-2-noop-{transport}", "site", transport=transport)
                noop_check(f"site.yml rerun over {transport}", reruns[transport])
        cores = bench_cores()
        costs = per_task_costs(TRANSPORTS, cores)
        large = None
        if LARGE:
            lab("down-2", "down", transport=default)
            env, names = large_lab(LARGE)
            start_l = lab(f"start-{LARGE}", "start", transport=default, extra_env=env)
            first_l = lab(f"site-{LARGE}-first", "site", transport=default, extra_env=env, sample_memory=True)
            mem_nodes = nodes_memory(names)
            noop_l = lab(f"site-{LARGE}-noop", "site", transport=default, extra_env=env)
            noop_check(f"site.yml rerun on {LARGE} nodes", noop_l)
            lab(f"down-{LARGE}", "down", transport=default, extra_env=env)
            large = (start_l, first_l, noop_l, mem_nodes)
        else:
            lab("down-2", "down", transport=default)
    except RunFailed as exc:
        print(f"FAILED: {exc}")
        return 1

    load = os.getloadavg()
    print(f"controller: {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end")
    print(f"\nper-task cost on 2 nodes (a no-op task on both; median of {ROUNDS} rounds; all rounds):")
    for transport in TRANSPORTS:
        for label, _path in cores:
            each = ", ".join(f"{c:.3f}" for c in costs[(transport, label)])
            print(f"  {transport:8s} {label:20s} {statistics.median(costs[(transport, label)]):6.3f} s/task   ({each})")
    print(f"\nmake lab on 2 nodes over {default} (median of {len(rounds)} rounds on fresh nodes; every round):")
    for label, key in (("nodes + API double + prepare.yml", "start"), ("site.yml first run", "first")):
        walls = [r[key]["wall"] for r in rounds]
        print(f"  {label:32s} {statistics.median(walls):7.1f} s  ({', '.join(f'{w:.1f}' for w in walls)})")
    walls = [r["noop"]["wall"] for r in rounds]
    changed = max(r["noop"]["changed"] for r in rounds)
    print(f"  {'site.yml no-op rerun':32s} {statistics.median(walls):7.1f} s  ({', '.join(f'{w:.1f}' for w in walls)})")
    ratios = [r["noop"]["wall"] / r["first"]["wall"] for r in rounds]
    print(
        f"  {'no-op rerun / first run':32s} {statistics.median(ratios):7.0%}    "
        f"({', '.join(f'{x:.0%}' for x in ratios)}; target <= 40 %)"
    )
    print(
        f"  tasks: first run {first2['tasks']} (changed={first2['changed']}), "
        f"no-op rerun {noop2['tasks']} (changed={changed} in every round)"
    )
    print(f"  CPU, first run:        {cpu_line(first2)}")
    print(f"  CPU, no-op rerun:      {cpu_line(noop2)}")
    stolen = ", ".join(f"{r['first']['cpu']['stolen']:.0f} / {r['noop']['cpu']['stolen']:.0f}" for r in rounds)
    print(f"  CPU-s stolen by the hypervisor in each round (first run / no-op rerun): {stolen}")
    print(f"  controller peak RSS (first run)  {first2['peak_rss'] / 2**20:7.0f} MiB")
    print("\nsite.yml no-op rerun on 2 nodes, per transport:")
    for transport, result in reruns.items():
        print(
            f"  {transport:8s} {result['wall']:7.1f} s  {result['tasks']:4d} tasks  "
            f"{result['wall'] / max(result['tasks'], 1):.2f} s/task  changed={result['changed']}"
        )
    print(f"\nslowest tasks of the no-op rerun over {default}, per role (profile_tasks, seconds for both nodes):")
    by_role: dict = {}
    for name, seconds in profile(noop2["text"]):
        role, _sep, task = name.rpartition(" : ")
        by_role.setdefault(role.rsplit(".", 1)[-1] or "(play)", []).append((seconds, task))
    for role, rows in sorted(by_role.items(), key=lambda kv: -sum(s for s, _t in kv[1])):
        rows.sort(reverse=True)
        print(f"  {role}: {len(rows)} tasks, {sum(s for s, _t in rows):.1f} s")
        for seconds, task in rows[:3]:
            print(f"      {seconds:6.2f} s  {task}")
    if large:
        start_l, first_l, noop_l, mem_nodes = large
        print(f"\n{LARGE} nodes over {default}:")
        print(f"  nodes + API double + prepare.yml {start_l['wall']:7.1f} s")
        print(
            f"  site.yml first run               {first_l['wall']:7.1f} s  "
            f"({first_l['wall'] / first2_wall:.2f}x the 2-node run's median; target <= 3x)"
        )
        busy = first_l["cpu"]["machine"]
        print(f"  CPU, first run:        {cpu_line(first_l)}")
        print(
            f"  CPU-bound floor: {busy:.0f} CPU-s / {os.cpu_count()} CPUs = {busy / os.cpu_count():.0f} s, "
            f"{busy / os.cpu_count() / first2_wall:.2f}x the 2-node run; the machine's CPU time is "
            f"{busy / first2['cpu']['machine']:.1f}x the 2-node run's for {LARGE // 2}x the nodes"
        )
        print(f"  site.yml no-op rerun             {noop_l['wall']:7.1f} s  (changed={noop_l['changed']})")
        print(f"  memory: nodes {mem_nodes / 2**20:.0f} MiB ({mem_nodes / LARGE / 2**20:.0f} MiB each), ", end="")
        print(f"controller Ansible peak RSS {first_l['peak_rss'] / 2**20:.0f} MiB")
    print(f"\nlogs: {LOGS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
