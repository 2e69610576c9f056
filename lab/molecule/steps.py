"""Copy a molecule run's output to a log and time its steps.

Reads molecule's output on stdin, writes it unchanged to the log named by the first argument,
and writes one line per step to the log named by the second argument: "<step> <seconds>".
Molecule announces each step with a line "INFO     [<scenario> > <step>] Executing"; a step
lasts until the next one starts or the output ends. lab/molecule/run.sh prints these in its
summary, so a CI log shows where a scenario's time went.
"""

from __future__ import annotations

import re
import sys
import time

# Molecule writes "[scenario > step] Executing", or "scenario ➜ step: Executing" in colour when the
# environment names a terminal (TERM); both are matched once the colour codes are taken out.
STEP = re.compile(r"^INFO\s+(?:\[[^\]>]+ > (?P<bracketed>[a-z_]+)\]|\S+ \u279c (?P<arrowed>[a-z_]+):) Executing\s*$")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def main(log_path: str, steps_path: str) -> None:
    current, started = None, time.monotonic()
    with open(log_path, "w") as log, open(steps_path, "w") as steps:

        def close(now: float) -> None:
            if current is not None:
                steps.write(f"{current} {now - started:.0f}\n")

        for line in sys.stdin:
            log.write(line)
            log.flush()
            match = STEP.match(COLOUR.sub("", line))
            if match:
                now = time.monotonic()
                close(now)
                current, started = match["bracketed"] or match["arrowed"], now
        close(time.monotonic())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
