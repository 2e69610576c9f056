"""Check mode told the truth: the --check run predicted exactly the (host, task) pairs the converge
then changed (tests/callbacks/gpufabric_changes.py wrote both runs to the log, prepare started it
afresh; the idempotence run changed nothing, or molecule would have stopped there), and the check
run on the converged nodes (after idempotence) reported nothing."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import PROJECT


def test_check_mode_predicted_every_change_of_the_converge(ephemeral):
    log = ephemeral / "changes.jsonl"
    assert log.exists(), f"{log}: the gpufabric_changes callback wrote nothing (provisioner env)"
    result = subprocess.run(
        [
            sys.executable,
            str(PROJECT / "tests" / "integration" / "compare_changes.py"),
            str(log),
            # side_effect.yml's reboots, its openibd restart and the marker it leaves for verify come
            # after the converge: real changes that no check run is asked to predict (they are not
            # the collection's).
            "--ignore",
            "^Reboot the node",
            "--ignore",
            "^Restart openibd",
            "--ignore",
            "^Write the reboot marker$",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    # The comparison's own lines go into the verify log (molecule.yml: pytest -r aP shows them).
    print(result.stdout, end="")
    assert result.returncode == 0, result.stdout + result.stderr
    # Not an empty comparison: the converge changed every node.
    assert "check mode predicted 0 " not in result.stdout, result.stdout


def test_a_check_run_on_the_converged_nodes_changes_nothing(ephemeral):
    """molecule.yml runs check again after idempotence: the log holds prepare's last task, the first
    check run, the converge and idempotence, then that check run (then the side effect); none of the
    records of a check run after the converge may say changed."""
    lines = (ephemeral / "changes.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    first_check = next(i for i, r in enumerate(records) if r["check"])
    converge = next(i for i, r in enumerate(records) if i > first_check and not r["check"])
    later = [r for r in records[converge:] if r["check"]]
    assert later, "no check run after the converge (molecule.yml test_sequence)"
    changed = sorted({f"{r['host']}: {r['role'] or ''} : {r['task']}" for r in later if r["changed"]})
    assert not changed, "\n".join(changed)
