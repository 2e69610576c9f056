# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode must tell the truth: compare the tasks a --check run said would change with the
tasks the real run after it changed, from the JSON lines the gpufabric_changes test callback
(tests/callbacks/gpufabric_changes.py) wrote.

Usage: python compare_changes.py LOG [--ignore REGEX ...]
Exit 0 when both runs changed the same (host, task) pairs, 1 otherwise (the differences are
printed), 2 when the log lacks one of the two runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Dict, Set, Tuple

Key = Tuple[str, str]


def changed_tasks(path: str) -> Dict[bool, Set[Key]]:
    runs: Dict[bool, Set[Key]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            record = json.loads(line)
            tasks = runs.setdefault(bool(record["check"]), set())
            if record.get("changed"):
                name = record["task"] if not record.get("role") else f"{record['role']} : {record['task']}"
                tasks.add((record["host"], name))
    return runs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--ignore", action="append", default=[], help="task names (regex) to leave out")
    args = parser.parse_args(argv)
    runs = changed_tasks(args.log)
    if True not in runs or False not in runs:
        print(f"{args.log}: needs one --check run and one real run", file=sys.stderr)
        return 2
    ignore = [re.compile(p) for p in args.ignore]

    def keep(key: Key) -> bool:
        return not any(p.search(key[1]) for p in ignore)

    predicted = {k for k in runs[True] if keep(k)}
    happened = {k for k in runs[False] if keep(k)}
    for host, task in sorted(predicted - happened):
        print(f"predicted but did not change: {host}: {task}")
    for host, task in sorted(happened - predicted):
        print(f"changed but check mode did not say so: {host}: {task}")
    print(f"check mode predicted {len(predicted)} changed task results; the real run changed {len(happened)}")
    return 0 if predicted == happened else 1


if __name__ == "__main__":
    sys.exit(main())
