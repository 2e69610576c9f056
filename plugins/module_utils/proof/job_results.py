# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an NCCL Job of proof/jobs.py reports back: its state and Pods turned into report checks (one
Pod on each planned node, the Job complete), the launcher Pod, and the runs collected from the
launcher's log or from the lab's simulator. Pure; no Ansible imports."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.jobs import INDEX_LABEL


def job_checks(
    job: Mapping[str, Any], state: Optional[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]
) -> List[Dict[str, Any]]:
    """What the cluster made of the Job: completed, and one Pod on each of its nodes."""
    where = f"Job {job['namespace']}/{job['name']}"
    nodes = ",".join(job["nodes"])
    conditions = {c.get("type"): c for c in ((state or {}).get("status") or {}).get("conditions") or []}
    done = (conditions.get("Complete") or {}).get("status") == "True"
    failed = conditions.get("Failed") or {}
    if done:
        found = "Complete"
    elif failed.get("status") == "True":
        found = f"Failed: {failed.get('reason')} {failed.get('message') or ''}".strip()
    elif state is None:
        found = "not found"
    else:
        found = "not finished within validate_nccl_timeout"
    placed = sorted(str((p.get("spec") or {}).get("nodeName") or "unscheduled") for p in pods)
    pending = [
        f"{(p.get('metadata') or {}).get('name')}: {c.get('message')}"
        for p in pods
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    ]
    on_nodes = placed == sorted(job["nodes"])
    return [
        _check(
            "nccl",
            nodes,
            job["name"],
            "Job completed",
            measured=found,
            expected="Complete",
            threshold="Complete",
            unit="",
            passed=done,
            detail=where,
        ),
        _check(
            "nccl",
            nodes,
            job["name"],
            "one Pod on each node",
            measured=",".join(placed) or "no Pod",
            expected=",".join(sorted(job["nodes"])),
            threshold=",".join(sorted(job["nodes"])),
            unit="",
            passed=on_nodes,
            detail=f"{where}, scheduled by the cluster's scheduler"
            + (f"; unschedulable: {'; '.join(pending)}" if pending else ""),
        ),
    ]


def launcher_pod(pods: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The Job's Pod of index 0 (the one that runs mpirun), if any."""
    for pod in pods:
        if ((pod.get("metadata") or {}).get("labels") or {}).get(INDEX_LABEL) == "0":
            return pod
    return None


def collect(
    jobs: Sequence[Mapping[str, Any]],
    states: Mapping[str, Optional[Mapping[str, Any]]],
    pods: Mapping[str, Sequence[Mapping[str, Any]]],
    logs: Mapping[str, Mapping[str, Any]],
    lab: Mapping[str, Sequence[Mapping[str, Any]]],
    figures: str,
) -> Dict[str, List[Dict[str, Any]]]:
    """The report's NCCL runs (each naming the source of its figures) and the Jobs' checks.

    ``states``: each Job as the API server returned it (None: gone); ``pods``: its Pods;
    ``logs``: the launcher's log read (``{log}`` or ``{failed, msg}``); ``lab``: the simulator's
    runs on the Job's nodes (``{host, rc, stdout, stderr}``), for ``figures == "lab_simulator"``."""
    runs: List[Dict[str, Any]] = []
    checks: List[Dict[str, Any]] = []
    for job in jobs:
        name = job["name"]
        where = f"{job['namespace']}/{name}"
        job_pods = list(pods.get(name) or [])
        checks += job_checks(job, states.get(name), job_pods)
        if figures == "lab_simulator":
            for run in lab.get(name) or []:
                output = (run.get("stdout") or "") + ("\n" + run["stderr"] if run.get("stderr") else "")
                runs.append(
                    {
                        "name": f"{name} from {run['host']}",
                        "nodes": list(job["hosts"]),
                        "output": output,
                        "source": f"lab: the all_reduce_perf simulator on {run['host']} with the Job's arguments "
                        f"({' '.join(job['args'])}, {len(job['nodes']) * job['gpus']} ranks); Job {where} was "
                        "applied, scheduled and completed by the cluster, but no container runs in the lab",
                    }
                )
            continue
        pod = launcher_pod(job_pods)
        read = logs.get(name) or {}
        if pod is None or read.get("failed") or not read.get("log"):
            reason = "no launcher Pod (index 0)" if pod is None else read.get("msg") or "the log is empty"
            checks.append(
                _check(
                    "nccl",
                    ",".join(job["nodes"]),
                    name,
                    "launcher log read",
                    measured="not read",
                    expected="read",
                    threshold="read",
                    unit="",
                    passed=False,
                    detail=f"Job {where}: {reason}",
                )
            )
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        runs.append(
            {
                "name": name,
                "nodes": list(job["hosts"]),
                "output": read["log"],
                "source": f"log of launcher Pod {job['namespace']}/{pod['metadata']['name']} on {node}, Job {where}",
            }
        )
    return {"runs": runs, "checks": checks}
