"""Faults inside a drained window, on lab nodes (tests/fault/drain_lab.py: fault-upg-01 and
fault-upg-02, Nodes of a private control plane, one workload Pod on each), in runs that move the
NVIDIA driver between the lab repository's two releases:

- a drain that a PodDisruptionBudget refuses past the timeout (playbooks/upgrade.yml): the node is
  not reloaded, stays cordoned saying which Pod and budget block it, its Pod runs on, the other
  node's batch never starts; once the budget allows it, a rerun finishes both nodes;
- a reboot that does not come back in time (playbooks/hosts.yml, gpu_driver_allow_reboot): the
  batch stops, the node is named as not back and kept cordoned, the node of the next batch is
  untouched; once the node is started again, a rerun finishes both;
- a node lost inside its upgrade window (playbooks/upgrade.yml, batches of one): the run ends at
  once, and the Node, cordoned, says so (the failure annotation written with the cordon); the next
  batch never starts; once the node is started again, a rerun resumes it and finishes both.

Each case checks the state of both nodes, both Nodes and the workloads after every run."""

from __future__ import annotations

import json
import re
import shutil
import threading
from typing import Any, Dict, List

import pytest
from controlplane_support import wait_until
from drain_lab import DRIVERS, NODES, SYSROOT, DrainLab, Run, driver_intent, nodes_sh, short_state, start_lab, touched

FAILED = "rollout.gpufabric.io/failed"
CORDONED_BY = "rollout.gpufabric.io/cordoned-by"
LOST = "upgrade: the run ended inside this node's maintenance window"  # written with the cordon
GIVEN_BACK = {"unschedulable": False, "annotations": {}}  # a Node as the collection leaves it after a window


@pytest.fixture(scope="module")
def lab():
    state = short_state()
    try:
        yield from start_lab(state)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def other_driver(lab: DrainLab) -> str:
    """The release the nodes do not run: both run the same one before each case."""
    loaded = {n: lab.host(n)["loaded"] for n in NODES}
    assert len(set(loaded.values())) == 1 and loaded["fault-upg-01"] in DRIVERS, loaded
    return next(d for d in DRIVERS if d != loaded["fault-upg-01"])


def at_target(host: Dict[str, str], target: str) -> bool:
    return (
        host.get("loaded") == target
        and host.get("boots") == f"open {target}"
        and all(host.get(p, "").startswith(f"{target}-1 ") for p in ("nvidia-kernel-open-dkms", "nvidia-driver-cuda"))
    )


def named(run: Run) -> List[str]:
    """The nodes a failed run's closing messages name as failed."""
    found = set(re.findall(r"(fault-upg-0\d) -> ", run.said))  # upgrade.yml's "NODE -> why"
    found |= set(re.findall(r"failed on (fault-upg-0\d)", run.said))  # a role's own stop
    for group in re.findall(r"Stopping after this batch: .*? \(([^)]*)\)", run.said):  # hosts.yml
        found |= {n.strip() for n in group.split(",")}
    return sorted(found)


def half_configured(before: Dict[str, Any], after: Dict[str, Any], run: Run) -> List[str]:
    """Nodes a failed run changed (driver stack, cordon, annotations) without naming them."""
    changed = [
        n for n in NODES if after["hosts"].get(n) != before["hosts"].get(n) or after["nodes"][n] != before["nodes"][n]
    ]
    return [n for n in changed if n not in named(run)]


def not_converged(lab: DrainLab, target: str) -> List[str]:
    """Nodes a run that passed left off target, cordoned or annotated."""
    now = lab.snapshot()
    return [n for n in NODES if not at_target(now["hosts"].get(n, {}), target) or now["nodes"][n] != GIVEN_BACK]


def assert_next_batch_untouched(before: Dict[str, Any], after: Dict[str, Any], requests: List[Dict[str, Any]]) -> None:
    """fault-upg-02, of the next batch, never started: its driver stack, its Node and its Pod are as
    they were, and the identity sent no patch of its Node and no eviction of its Pod."""
    assert after["hosts"]["fault-upg-02"] == before["hosts"]["fault-upg-02"]
    assert after["nodes"]["fault-upg-02"] == GIVEN_BACK
    assert after["pods"]["cache"] == before["pods"]["cache"]
    assert touched(requests, "fault-upg-02", [before["pods"]["cache"]["name"]]) == []


def budget_holds(lab: DrainLab) -> bool:
    """The disruption controller counts the db Pod under its budget, and allows no disruption."""
    status = json.loads(lab.cluster.kubectl("get", "pdb", "db", "-n", "ml", "-o", "json").stdout).get("status", {})
    return status.get("currentHealthy") == 1 and status.get("disruptionsAllowed") == 0


def test_a_drain_refused_by_a_budget_past_the_timeout(lab, fault_row):
    """upgrade.yml, while a budget that allows no disruption covers fault-upg-01's Pod and the drain
    may wait 5 s: the run stops in fault-upg-01's window before any layer, naming the node, the Pod
    and the budget; the driver stack of both nodes is as it was, the Pod runs where it ran,
    fault-upg-01 stays cordoned with the failed annotation (docs/safety.md, docs/upgrade.md) and
    fault-upg-02, of the next batch, was neither cordoned nor evicted. With the budget relaxed, the
    rerun resumes fault-upg-01, then upgrades fault-upg-02, and gives both Nodes back."""
    target = other_driver(lab)
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "ml"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    }
    lab.cluster.apply([pdb])
    wait_until(lambda: budget_holds(lab), "the budget counting the db Pod (no disruption allowed)")
    before = lab.snapshot()
    db, cache = before["pods"]["db"]["name"], before["pods"]["cache"]["name"]
    extra = {
        "gpufabric_gpu_driver": driver_intent(target),
        "gpufabric_upgrade_drain_timeout": 5,
        "gpufabric_upgrade_drain_retry_delay": 1,
    }

    run = lab.playbook("playbooks/upgrade.yml", extra=extra)
    fault_row.runs += 1
    after = lab.snapshot()
    requests = lab.requests(run)
    fault_row.unnamed_half_configured += half_configured(before, after, run)
    assert run.rc != 0, run.tail()
    assert named(run) == ["fault-upg-01"], run.tail()
    assert "The drain of fault-upg-01 did not finish within 5 s" in run.said, run.tail()
    assert f"ml/{db} (Running): PodDisruptionBudget ml/db allows 0 disruption(s)" in run.said, run.tail()
    assert "Not reached (still at their old versions): fault-upg-02." in run.said, run.tail()
    closing = run.said.partition("The upgrade stopped with")[2].partition("Fix the cause")[0]
    assert closing and ".." not in closing, closing  # one full stop after each node's reason
    # No reload, nothing installed, on either node; both Pods run where they ran (same Pods).
    assert after["hosts"] == before["hosts"]
    assert after["pods"] == before["pods"]
    node1 = after["nodes"]["fault-upg-01"]
    assert node1["unschedulable"] and node1["annotations"][CORDONED_BY] == "upgrade", node1
    assert re.match(r"upgrade: .*The drain of fault-upg-01 did not finish", node1["annotations"][FAILED]), node1
    assert f"ml/{db}" in node1["annotations"][FAILED] and "PodDisruptionBudget ml/db" in node1["annotations"][FAILED]
    assert after["nodes"]["fault-upg-02"] == before["nodes"]["fault-upg-02"] == GIVEN_BACK
    # The eviction API refused db's Pod and evicted nothing; fault-upg-02 was never cordoned nor drained.
    evictions = [r for r in requests if r["subresource"] == "eviction"]
    assert evictions and {(r["name"], r["code"]) for r in evictions} == {(db, 429)}, evictions
    assert touched(requests, "fault-upg-02", [cache]) == []

    lab.cluster.kubectl("patch", "pdb", "db", "-n", "ml", "--type", "merge", "-p", '{"spec": {"minAvailable": 0}}')
    rerun = lab.playbook("playbooks/upgrade.yml", extra=extra)
    fault_row.runs += 1
    pods = lab.wait_workloads_running()
    fault_row.unnamed_half_configured += not_converged(lab, target) if rerun.rc == 0 else []
    fault_row.objects_lost += lab.objects_missing()
    # Survived: the failed run named the node the fault hit, and the rerun converged.
    fault_row.survived = named(run) == ["fault-upg-01"] and rerun.rc == 0 and not not_converged(lab, target)
    lab.cluster.kubectl("delete", "pdb", "db", "-n", "ml")
    fault_row.check()
    assert "(resumes: a run left it cordoned: upgrade: " in rerun.said, rerun.tail()
    assert "fault-upg-01: upgraded" in rerun.said and "fault-upg-02: upgraded" in rerun.said, rerun.tail()
    # One batch at a time: fault-upg-01 was given back before fault-upg-02 was cordoned.
    patches = [r for r in lab.requests(rerun) if r["resource"] == "nodes" and r["verb"] == "patch"]
    last1 = max(r["time"] for r in patches if r["name"] == "fault-upg-01")
    assert last1 < min(r["time"] for r in patches if r["name"] == "fault-upg-02"), patches
    assert pods["db"]["uid"] != before["pods"]["db"]["uid"]  # drained this time, and running again


class KeepDown(threading.Thread):
    """Watches a node's container during a run: notes when it goes down (the reboot) and stops it
    again should it come back before the run ends: the node stays down past the timeout."""

    def __init__(self, lab: DrainLab, node: str):
        super().__init__(daemon=True)
        self.lab, self.node = lab, node
        self.went_down = False
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            up = self.lab.running(self.node)
            if not up:
                self.went_down = True
            elif self.went_down:
                self.lab.stop(self.node)

    def stop(self) -> None:
        self.done.set()
        self.join()


def test_a_reboot_that_does_not_come_back_in_time(lab, fault_row):
    """hosts.yml in batches of one with gpu_driver_allow_reboot and a 10 s reboot timeout, while a
    process holds fault-upg-01's driver (the module's use count): the driver cannot be unloaded, the
    node is rebooted and does not come back (its container stops, and is started only after the
    run). The run names fault-upg-01 as not back, keeps its Node cordoned with the failed
    annotation, says that it stops after the batch with fault-upg-02 not reached, and writes the
    report; fault-upg-02 was neither cordoned, drained nor changed. Once fault-upg-01 is started,
    a rerun finishes both nodes and gives the Nodes back."""
    target = other_driver(lab)
    # The fault: a process holds the driver (its use count, as a real module shows it in /proc/modules).
    hold = "s/^nvidia \\([0-9]*\\) 0 - /nvidia \\1 1 lab_holder, /"
    lab.node_exec("fault-upg-01", f"sed -i '{hold}' {SYSROOT}/proc/modules")
    before = lab.snapshot()
    assert "lab_holder" in before["hosts"]["fault-upg-01"]["module"], before["hosts"]
    extra = {
        "gpufabric_gpu_driver": driver_intent(target),
        "gpu_driver_allow_reload": True,
        "gpu_driver_allow_reboot": True,
        "gpu_driver_reboot_timeout": 10,
    }
    report = lab.state / "rollout-report.txt"
    report.unlink(missing_ok=True)

    watch = KeepDown(lab, "fault-upg-01")
    watch.start()
    try:
        run = lab.playbook("playbooks/hosts.yml", extra=extra)
    finally:
        watch.stop()
    fault_row.runs += 1
    after = lab.snapshot()
    requests = lab.requests(run)
    down = not lab.running("fault-upg-01")
    # fault-upg-01 cannot be read while down: compared once it is back, below.
    fault_row.unnamed_half_configured += [n for n in half_configured(before, after, run) if n != "fault-upg-01"]
    assert run.rc != 0, run.tail()
    assert watch.went_down and down, "the reboot did not take fault-upg-01 down"
    assert named(run) == ["fault-upg-01"], run.tail()
    assert "fault-upg-01 was rebooted to load NVIDIA driver" in run.said, run.tail()
    assert "did not come back within 10 s" in run.said, run.tail()
    assert "Stopping after this batch: 1 of 2 GPU node(s) failed or became unreachable (fault-upg-01)" in run.said
    assert "Not reached (unchanged by this run): fault-upg-02." in run.said, run.tail()
    node1 = after["nodes"]["fault-upg-01"]
    assert node1["unschedulable"] and node1["annotations"][CORDONED_BY] == "gpu_driver", node1
    assert re.match(r"gpu_driver: .*did not come back within 10 s", node1["annotations"][FAILED]), node1
    text = report.read_text() if report.exists() else ""
    node1_report = text.partition("== node fault-upg-01 ==")[2].partition("== node fault-upg-02 ==")[0]
    assert "did not come back within 10 s" in node1_report, text[-3000:]
    assert_next_batch_untouched(before, after, requests)

    started = nodes_sh("up", "fault-upg-01")
    assert started.returncode == 0, started.stderr[-2000:]
    back = lab.host("fault-upg-01")
    fault_row.unnamed_half_configured += [] if "fault-upg-01" in named(run) else ["fault-upg-01"]
    # The reboot loaded the release installed before it; the process that held the driver is gone.
    assert back["loaded"] == target and "lab_holder" not in back["module"], back
    rerun = lab.playbook("playbooks/hosts.yml", extra=extra)
    fault_row.runs += 1
    lab.wait_workloads_running()
    fault_row.unnamed_half_configured += not_converged(lab, target) if rerun.rc == 0 else []
    fault_row.objects_lost += lab.objects_missing()
    # Survived: the failed run named the node the fault hit, and the rerun converged.
    fault_row.survived = named(run) == ["fault-upg-01"] and rerun.rc == 0 and not not_converged(lab, target)
    fault_row.check()


def lost_in_window(run: Run, after: Dict[str, Any], node: str) -> bool:
    """The run's recap counts node unreachable and its Node says, with the cordon kept, that a run
    ended inside its window (no play runs after a batch that became unreachable as a whole)."""
    recap = re.search(rf"^{re.escape(node)}\s+:.*\bunreachable=(\d+)", run.out, re.M)
    marks = after["nodes"][node]
    return bool(
        recap
        and int(recap[1]) > 0
        and marks["unschedulable"]
        and marks["annotations"].get(CORDONED_BY) == "upgrade"
        and marks["annotations"].get(FAILED, "").startswith(LOST)
    )


def test_a_node_lost_inside_its_upgrade_window(lab, fault_row):
    """upgrade.yml in its default batches of one; fault-upg-01's container is stopped as soon as its
    Node is cordoned, so the node becomes unreachable inside its window. Its batch is then wholly
    unreachable and ansible-core runs no later play: the run fails, the recap counts fault-upg-01
    unreachable, and its Node, still cordoned, carries the failed annotation written with the cordon
    (the run ended inside the window; the node may be half-upgraded). fault-upg-02, of the next
    batch, was neither cordoned, drained nor changed. Once fault-upg-01 is started, the rerun
    resumes it (the annotation), upgrades both and gives both Nodes back."""
    target = other_driver(lab)
    before = lab.snapshot()
    extra = {"gpufabric_gpu_driver": driver_intent(target)}
    cordoned, done = threading.Event(), threading.Event()

    def stop_once_cordoned() -> None:
        while not done.wait(0.3):
            if lab.node("fault-upg-01")["annotations"].get(CORDONED_BY) == "upgrade":
                lab.stop("fault-upg-01")
                cordoned.set()
                return

    watch = threading.Thread(target=stop_once_cordoned, daemon=True)
    watch.start()
    try:
        run = lab.playbook("playbooks/upgrade.yml", extra=extra)
    finally:
        done.set()
        watch.join()
    fault_row.runs += 1
    after = lab.snapshot()
    requests = lab.requests(run)
    named_lost = lost_in_window(run, after, "fault-upg-01")
    fault_row.unnamed_half_configured += [
        n for n in half_configured(before, after, run) if not (n == "fault-upg-01" and named_lost)
    ]
    assert cordoned.is_set() and not lab.running("fault-upg-01"), "fault-upg-01 was never cordoned by the run"
    assert run.rc != 0, run.tail()
    assert named_lost, f"{after['nodes']['fault-upg-01']}\n{run.tail()}"
    assert "may be half-upgraded" in after["nodes"]["fault-upg-01"]["annotations"][FAILED]
    # The last batch line says where each node stood when the run ended.
    assert "Batch 1 of 2: fault-upg-01. Earlier batches: none." in run.said, run.tail()
    assert "Not reached yet: fault-upg-02." in run.said, run.tail()
    assert_next_batch_untouched(before, after, requests)

    started = nodes_sh("up", "fault-upg-01")
    assert started.returncode == 0, started.stderr[-2000:]
    rerun = lab.playbook("playbooks/upgrade.yml", extra=extra)
    fault_row.runs += 1
    lab.wait_workloads_running()
    fault_row.unnamed_half_configured += not_converged(lab, target) if rerun.rc == 0 else []
    fault_row.objects_lost += lab.objects_missing()
    fault_row.survived = named_lost and rerun.rc == 0 and not not_converged(lab, target)
    fault_row.check()
    assert "(resumes: a run left it cordoned: upgrade: the run ended inside" in rerun.said, rerun.tail()
    assert "fault-upg-01: upgraded" in rerun.said and "fault-upg-02: upgraded" in rerun.said, rerun.tail()
