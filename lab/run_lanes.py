#!/usr/bin/env python
"""Run test lanes side by side, each into its own log, and never stay silent for long.

Usage: lab/run_lanes.py [--tag TAG] [--every SECONDS] NAME=COMMAND [NAME=COMMAND ...]

Each COMMAND runs through bash, its output (stdout and stderr) into .lab/logs/<tag>/<NAME>.log.
While any lane runs, one status line comes every --every seconds (default 30): each lane's state,
its elapsed time and the last line it printed. A lane that ends prints one line: passed or failed,
its time and its log. When a lane fails, the end of the output is a short summary naming the lane,
the failing tests or errors found in its log (pytest's FAILED/ERROR lines, ansible-test's ERROR
lines, Ansible's fatal lines, make's errors) and the last lines of the log, then the log's path.
The exit status is 0 only when every lane passed.

Each status line and the last line also say how busy the machine's CPUs were and how much of
their time they waited on I/O (/proc/stat, over the last interval and over the whole run), which
tells whether moving work between lanes can shorten the run (docs/contributing.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
# What a log says about why it failed, most specific first (up to MAX_FINDINGS lines in the summary).
FINDINGS = re.compile(
    r"^(FAILED |ERROR[: ]|FATAL|E   |fatal: |\[ERROR\]|CRITICAL |make(\[\d+\])?: \*\*\*|\[lab\] ERROR|.*Error: )"
)
MAX_FINDINGS = 15
TAIL_LINES = 25


def cpu_times(stat: Path = Path("/proc/stat")) -> Optional[Tuple[int, int, int]]:
    """(busy, iowait, total) CPU time of every CPU since boot, in clock ticks, from /proc/stat's
    ``cpu`` line (user nice system idle iowait irq softirq steal; idle and iowait are not busy).
    None where it cannot be read."""
    try:
        fields = stat.read_text().splitlines()[0].split()
        if fields[0] != "cpu":
            return None
        ticks = [int(value) for value in fields[1:9]]
    except (OSError, IndexError, ValueError):
        return None
    total = sum(ticks)
    iowait = ticks[4] if len(ticks) > 4 else 0
    return total - ticks[3] - iowait, iowait, total


def busy(before: Optional[Tuple[int, int, int]], after: Optional[Tuple[int, int, int]]) -> str:
    """How busy the CPUs were between two cpu_times readings, and how much of their time they waited
    on I/O, as "N % busy, M % iowait" ("? busy" when unknown)."""
    if before is None or after is None or after[2] <= before[2]:
        return "? busy"
    total = after[2] - before[2]
    return (
        f"{round(100 * (after[0] - before[0]) / total)} % busy, {round(100 * (after[1] - before[1]) / total)} % iowait"
    )


def last_line(path: Path) -> str:
    """The last non-empty line of a file (read from its end), cut to 100 characters."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    text = lines[-1] if lines else ""
    return text if len(text) <= 100 else text[:97] + "..."


def findings(text: str) -> List[str]:
    return [line.rstrip() for line in text.splitlines() if FINDINGS.match(line)][:MAX_FINDINGS]


class Lane:
    def __init__(self, name: str, command: str, log: Path) -> None:
        self.name, self.command, self.log = name, command, log
        self.start = time.monotonic()
        self.end: Optional[float] = None
        self.rc: Optional[int] = None
        log.parent.mkdir(parents=True, exist_ok=True)
        self._out = log.open("wb")
        self.proc = subprocess.Popen(
            ["bash", "-c", command], cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def poll(self) -> bool:
        """True once the lane has ended (it records its status and time then)."""
        if self.rc is None and self.proc.poll() is not None:
            self.rc, self.end = self.proc.returncode, time.monotonic()
            self._out.close()
        return self.rc is not None

    def elapsed(self) -> int:
        return int((self.end or time.monotonic()) - self.start)

    def status(self) -> str:
        if self.rc is None:
            return f"{self.name} running {self.elapsed()} s: {last_line(self.log) or '(no output yet)'}"
        return f"{self.name} {'passed' if self.rc == 0 else 'FAILED'} ({self.elapsed()} s)"

    def summary(self) -> List[str]:
        text = self.log.read_text(errors="replace")
        found = findings(text)
        tail = [line.rstrip() for line in text.splitlines()[-TAIL_LINES:]]
        out = [f"== {self.name} failed (exit {self.rc}) after {self.elapsed()} s: {self.command}"]
        if found:
            out += ["   what failed:"] + [f"     {line}" for line in found]
        out += [f"   last {len(tail)} lines of its log:"] + [f"     {line}" for line in tail]
        out += [f"   full log: {self.log}"]
        return out


def run(
    lanes: Dict[str, str],
    tag: str,
    every: float,
    say=print,
    logs: Optional[Path] = None,
    stat: Path = Path("/proc/stat"),
) -> int:
    logs = logs or REPO / ".lab" / "logs" / tag
    say(f"[{tag}] {', '.join(lanes)} side by side; logs in {logs}/")
    first = last = cpu_times(stat)
    running = [Lane(name, command, logs / f"{name}.log") for name, command in lanes.items()]
    ended: List[Lane] = []
    next_status = time.monotonic() + every
    while running:
        time.sleep(0.5)
        for lane in [lane for lane in running if lane.poll()]:
            running.remove(lane)
            ended.append(lane)
            say(f"[{tag}] {lane.status()}; log {lane.log}")
        if running and time.monotonic() >= next_status:
            now = cpu_times(stat)
            say(f"[{tag}] CPUs {busy(last, now)} | " + " | ".join(lane.status() for lane in ended + running))
            last, next_status = now, time.monotonic() + every
    failed = [lane for lane in ended if lane.rc != 0]
    cpus = f"the {os.cpu_count()} CPUs: {busy(first, cpu_times(stat))}"
    if not failed:
        say(f"[{tag}] passed: " + ", ".join(f"{lane.name} ({lane.elapsed()} s)" for lane in ended) + f"; {cpus}")
        return 0
    say("")
    for lane in failed:
        for line in lane.summary():
            say(line)
    say(f"[{tag}] FAILED: {', '.join(lane.name for lane in failed)} (see above; full logs in {logs}/); {cpus}")
    return 1


def parse(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="test")
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("lanes", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args(argv)
    lanes: Dict[str, str] = {}
    for item in args.lanes:
        name, sep, command = item.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name) or not command.strip() or name in lanes:
            parser.error(f"each lane is NAME=COMMAND with a unique lower-case NAME, got {item!r}")
        lanes[name] = command
    args.lanes = lanes
    return args


def main(argv: List[str]) -> int:
    args = parse(argv)

    def say(line: str) -> None:
        print(line, flush=True)

    return run(args.lanes, args.tag, args.every, say)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
