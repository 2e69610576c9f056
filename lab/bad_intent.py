"""Bad intent on the running lab: each case is refused before any change.

The bad-input suite (tests/unit/plan/cases/bad_intent.yml) proves, fast and without nodes, that the
plan refuses every case with a message naming the variable and the value. This runs a chosen set of
those cases (one or more per group of variables, typos among them) through the real job on the
running lab -- `lab/lab.sh site -e @case.json`, site.yml over the lab's transport -- and proves what
the unit suite cannot: the run fails in the plan, no task reports a change on any host, no file on
the lab nodes is written, and no object is written to the lab's API server (the resourceVersion of
every object the collection owns is unchanged, and none is added or removed).

Usage: python lab/bad_intent.py [CASE-ID...]   (default: the cases in CASES; `all` for every case
whose refusal needs no changed facts). Exits 1 naming each case that was not refused as expected.
Run by lab/check.sh on the converged lab.
"""

from __future__ import annotations

import copy
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

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "tests" / "unit" / "plan" / "cases" / "bad_intent.yml"
LAB_VARS = REPO / "inventory" / "lab" / "group_vars"
# One or more per group of the suite: fabric, other node intent, roce_*, doca_ofed_*, gpudirect_*,
# nccl_config_*, gpufabric_rails, cluster CIDRs and k8s, the GPU Operator, validate_*, storage.
CASES = [
    "fabric-typo-key",
    "fabric-tos-disagrees-with-ecn-on",
    "variable-typo-fabric",
    "roce-backend-typo",
    "doca-version-latest",
    "rdma-method-typo",
    "nccl-gdr-level",
    "rails-block-size-negative",
    "rails-supernet-is-pod-cidr",
    "k8s-mode-typo",
    "k8s-kubeconfig-missing",
    "gpu-operator-mig-strategy-typo",
    "validate-fraction-zero",
    "validate-fraction-above-one",
    "storage-backend-typo",
    "storage-foreign-backend-section",
]
OWNER = "app.kubernetes.io/managed-by=gpufabric.rollout"
# Written by the lab's own services while it runs, not by a playbook: left out of the node check.
NODE_DIRS = "/etc /usr/local /opt /var/lib/gpufabric-lab/sysroot"
MARKER = "/run/gpufabric-bad-intent.marker"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def lab_vars() -> Dict[str, Any]:
    """The lab inventory's group variables as written (a case's mappings are merged over them)."""
    out: Dict[str, Any] = {}
    for path in sorted(LAB_VARS.glob("*/*.yml")):
        out.update(yaml.safe_load(path.read_text()) or {})
    return out


def merged(base: Any, changes: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in changes.items():
        out[key] = merged(out.get(key), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def extra_vars(case: Dict[str, Any], lab: Dict[str, Any]) -> Dict[str, Any]:
    """The case as extra variables: extra variables replace a variable whole, so a case's mapping
    is merged over the lab's value first (as the unit suite does)."""
    out: Dict[str, Any] = {}
    for name, value in (case.get("set") or {}).items():
        out[name] = merged(lab.get(name), value) if isinstance(value, dict) else value
    out.update(case.get("replace") or {})
    for dotted in case.get("unset") or []:
        name, key = dotted.split(".", 1)
        value = copy.deepcopy(out.get(name, lab.get(name)))
        value.pop(key, None)
        out[name] = value
    if case.get("unset_vars"):
        raise ValueError(f"{case['id']}: unset_vars cannot be expressed as extra variables")
    return out


def runnable(case: Dict[str, Any]) -> bool:
    return case.get("stage", "check") == "check" and case["scope"] in ("node", "cluster") and not case.get("unset_vars")


def sh(argv: List[str], **kw) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


def nodes() -> List[str]:
    return os.environ.get("LAB_NODES", "gpu-node-01 gpu-node-02").split()


def mark_nodes() -> None:
    for node in nodes():
        sh(["podman", "exec", node, "touch", MARKER])


def written_on_nodes() -> List[str]:
    """Regular files under the node directories written since the marker, per node."""
    out = []
    for node in nodes():
        found = sh(
            ["podman", "exec", node, "sh", "-c", f"find {NODE_DIRS} -xdev -type f -newer {MARKER} 2>/dev/null || true"]
        )
        out += [f"{node}:{line}" for line in found.split()]
    return out


def owned_objects(kubeconfig: str) -> Dict[Tuple[str, str, str], str]:
    """(kind, namespace, name) -> resourceVersion of every object the collection owns."""
    kinds = sh(["kubectl", "--kubeconfig", kubeconfig, "api-resources", "--verbs=list", "-o", "name"]).split()
    kinds = [k for k in kinds if k not in ("events", "events.events.k8s.io")]
    listed = json.loads(
        sh(["kubectl", "--kubeconfig", kubeconfig, "get", ",".join(kinds), "-A", "-l", OWNER, "-o", "json"])
    )
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for o in listed["items"]
    }


def changed_hosts(log: str) -> List[str]:
    recap = log.split("PLAY RECAP", 1)[-1]
    return [line.strip() for line in recap.splitlines() if re.search(r"changed=[1-9]", line)]


def run_case(case: Dict[str, Any], lab: Dict[str, Any], tmp: Path) -> List[str]:
    """Run site.yml with the case; the problems found (empty: refused as expected)."""
    path = tmp / f"{case['id']}.json"
    path.write_text(json.dumps(extra_vars(case, lab)))
    proc = subprocess.run(
        [str(REPO / "lab" / "lab.sh"), "site", "-e", f"@{path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    log = ANSI.sub("", proc.stdout + proc.stderr)
    (tmp / f"{case['id']}.log").write_text(log)
    problems = []
    if proc.returncode == 0:
        problems.append("site.yml passed")
    if "PLAY RECAP" not in log:
        problems.append("no play recap (the run did not reach Ansible)")
    problems += [f"changed on {line}" for line in changed_hosts(log)]
    if not any(all(want in line for want in case["expect"]) for line in log.splitlines()):
        problems.append(f"no line names all of {case['expect']}")
    failed_plays = re.findall(r"^PLAY \[([^\]]*)\]", log.split("PLAY RECAP", 1)[0], re.M)
    if failed_plays and not failed_plays[-1].startswith("Plan"):
        problems.append(f"the run went past the plan (last play: {failed_plays[-1]!r})")
    return problems


def main(argv: List[str]) -> int:
    suite = {case["id"]: case for case in yaml.safe_load(SUITE.read_text())}
    wanted = [c for c in suite if runnable(suite[c])] if argv == ["all"] else (argv or CASES)
    unknown = [c for c in wanted if c not in suite]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; see {SUITE.relative_to(REPO)}", file=sys.stderr)
        return 2
    kubeconfig = sh([str(REPO / "lab" / "kube.sh"), "kubeconfig", "admin"]).strip()
    lab = lab_vars()
    before = owned_objects(kubeconfig)
    mark_nodes()
    failures: List[str] = []
    logs = REPO / ".lab" / "bad-intent"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case_id in wanted:
            start = time.monotonic()
            problems = run_case(suite[case_id], lab, Path(tmp))
            (logs / f"{case_id}.log").write_text((Path(tmp) / f"{case_id}.log").read_text())
            status = "refused" if not problems else "NOT REFUSED AS EXPECTED: " + "; ".join(problems)
            print(f"  {case_id}: {status} ({time.monotonic() - start:.0f} s)", flush=True)
            failures += [f"{case_id}: {p}" for p in problems]
    written = written_on_nodes()
    after = owned_objects(kubeconfig)
    failures += [f"written on a lab node: {w}" for w in written]
    failures += [
        f"API object changed: {'/'.join(k)}" for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)
    ]
    print(f"{len(wanted)} cases; {len(before)} owned API objects and the nodes' {NODE_DIRS} checked before and after")
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
