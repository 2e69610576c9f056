"""Run ansible-playbook and record the controller's own CPU: its main process and every worker it forks.

    python benchmarks/controller_cpu.py LOG ansible-playbook ARGS...

ansible-core forks one worker process per host and task; a worker runs the task's action and starts
the module (over the connection: a shell and the module's interpreter with a local connection, ssh
with SSH). Each worker appends its own CPU-s (user + system, ``getrusage(RUSAGE_SELF)``: without the
processes it started) to LOG as ``worker SECONDS`` when it ends, and the main process ``main SECONDS``
at exit. Their sum is what the controller's Python costs, whatever the modules cost and wherever they
run. Nothing else of the run changes.
"""

from __future__ import annotations

import atexit
import os
import resource
import runpy
import sys


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def record(log: str, what: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"{what} {own_cpu():.3f}\n")


def main() -> None:
    log, program = sys.argv[1], sys.argv[2]
    from ansible.executor.process import worker  # the ansible-core of this interpreter

    run = worker.WorkerProcess._run

    def recorded_run(self):
        try:
            return run(self)
        finally:
            record(log, "worker")

    worker.WorkerProcess._run = recorded_run
    main_pid = os.getpid()
    atexit.register(lambda: os.getpid() == main_pid and record(log, "main"))
    sys.argv = sys.argv[2:]
    runpy.run_path(program, run_name="__main__")


def read(log: str) -> dict:
    """{"main": CPU-s, "workers": CPU-s, "worker_count": n} from a LOG this wrapper wrote."""
    out = {"main": 0.0, "workers": 0.0, "worker_count": 0}
    with open(log, encoding="utf-8") as handle:
        for line in handle:
            what, seconds = line.split()
            if what == "main":
                out["main"] += float(seconds)
            else:
                out["workers"] += float(seconds)
                out["worker_count"] += 1
    return out


if __name__ == "__main__":
    main()
