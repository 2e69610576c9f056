"""Helpers of the lab cluster tests: the Cluster handle and polling (fixtures in conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

import pytest
from upstream_crds import UPSTREAM_CRDS  # tests/ (conftest.py puts it on sys.path)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(1, str(REPO / "tests"))

_PERMISSIVE: List[Path] = []
_COLLECTIONS = REPO / ".collections"
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))

NODES = {"gpu-node-01": "dgx-h200-8x8@1", "gpu-node-02": "dgx-h200-8x8@2"}


def crds_dir() -> Path:
    """The CRDs the clusters and the roles get: the upstream ones (tests/upstream_crds.py), else the
    lab's permissive stand-ins (lab/crds/permissive.py); a test that needs the schemas themselves
    takes the `crds` fixture (upstream_crds.require)."""
    if UPSTREAM_CRDS.is_dir():
        return UPSTREAM_CRDS
    if not _PERMISSIVE:
        out = Path(tempfile.mkdtemp(prefix="gpufabric-crds-permissive."))
        subprocess.run(
            [sys.executable, str(REPO / "lab" / "crds" / "permissive.py"), str(out)], check=True, capture_output=True
        )
        _PERMISSIVE.append(out)
    return _PERMISSIVE[0]


def wait_until(check: Callable[[], Any], what: str, timeout: float = 60, interval: float = 0.25) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"{what}: not reached within {timeout} s (last: {last!r})")


class Cluster:
    def __init__(self, state: Path, bindir: Path, sysroots: Path):
        self.state = state
        self.bin = bindir
        self.sysroots = sysroots
        self.admin = state / "admin.kubeconfig"
        self.kubeconfig = state / "kubeconfig"  # the collection's least-privilege identity
        self.env = dict(os.environ, GPUFABRIC_KUBE_DIR=str(state))

    def kube_sh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(REPO / "lab" / "kube.sh"), *args], env=self.env, capture_output=True, text=True, check=check
        )

    def kubectl(self, *args: str, kubeconfig: Optional[Path] = None, check: bool = True, timeout: float = 120):
        res = subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(kubeconfig or self.admin), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if check and res.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def apply(self, objects: List[Dict[str, Any]], kubeconfig: Optional[Path] = None) -> None:
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        res = subprocess.run(
            [
                str(self.bin / "kubectl"),
                "--kubeconfig",
                str(kubeconfig or self.admin),
                "apply",
                "--server-side",
                "--field-manager=integration-test",
                "-f",
                "-",
            ],
            input=doc,
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            pytest.fail(f"kubectl apply failed: {res.stderr.strip()}")

    def api(self, kubeconfig: Optional[Path] = None):
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.admin))


def controlplane_binaries() -> Path:
    """The cached control plane binaries (lab/controlplane/build.sh builds them once per machine)."""
    build = subprocess.run(
        [str(REPO / "lab" / "controlplane" / "build.sh")], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail("the control plane binaries could not be built:\n" + build.stderr[-3000:])
    return Path(build.stdout.strip())


@contextlib.contextmanager
def private_cluster(state: Path, sysroots: Path, nodes: Mapping[str, str]) -> Iterator[Cluster]:
    """A lab control plane of its own (lab/kube.sh in `state`), with `nodes` ({Node name: snapshot})
    registered from their hardware snapshots and the CRDs of ``crds_dir()`` installed; stopped and
    removed on exit."""
    c = Cluster(state, controlplane_binaries(), sysroots)
    started = c.kube_sh("start", check=False)
    if started.returncode != 0:
        pytest.fail("lab/kube.sh start failed:\n" + started.stderr[-3000:])
    try:
        registered = subprocess.run(
            [
                sys.executable,
                str(REPO / "lab" / "cluster" / "nodes.py"),
                "--kubeconfig",
                str(c.admin),
                "--sysroots",
                str(c.sysroots),
                *(f"{name}={snapshot}" for name, snapshot in nodes.items()),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if registered.returncode != 0:
            pytest.fail("lab/cluster/nodes.py failed:\n" + registered.stderr[-3000:])
        c.kubectl("apply", "--server-side", "-f", str(crds_dir()))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield c
    finally:
        c.kube_sh("stop", "--purge", check=False)


def checked_plan(topology: Dict[str, Any], nad_namespace: str) -> Dict[str, Any]:
    """The cluster plan the network_operator and rdma_networks roles apply for the two nodes, from
    the variables as the plan hands them to the planner: checked, the specs' defaults filled in."""
    from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
    from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import check
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.networks import plan_cluster
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import fabric_of

    specs = load_specs(str(REPO))["plan"]
    spec = {"gpufabric_rails": specs["cluster_intent"]["gpufabric_rails"]}
    spec["gpufabric_fabric"] = specs["node_intent"]["gpufabric_fabric"]
    values, problems = check(
        spec,
        {
            "gpufabric_rails": {
                "supernet": "10.200.0.0/16",
                "rail_prefix": 20,
                "block_size": 32,
                "nad_namespace": nad_namespace,
            },
            "gpufabric_fabric": {"transport": "roce", "rdma_netns_mode": "shared", "mtu": 9000},
        },
    )
    assert not problems, problems
    return plan_cluster(
        values["gpufabric_rails"],
        topology,
        {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
        fabric_of(values),
        "2.27.3",
    )


def assert_check_predicted(log: Path) -> None:
    """The check runs in `log` predicted exactly the tasks the real runs changed
    (tests/integration/compare_changes.py)."""
    compared = subprocess.run(
        [sys.executable, str(REPO / "tests" / "integration" / "compare_changes.py"), str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr


PUBLISH_PLAY = """
- name: Publish one inventory's objects
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  tasks:
    - name: Publish
      ansible.builtin.include_role:
        name: gpufabric.rollout.k8s_publish
        tasks_from: apply
"""


def publish_run(tmp: Path, variables: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """One ansible-playbook run of k8s_publish's apply path on localhost, as the cluster roles run it, with
    `variables` (the controller's Python added): its CompletedProcess (``done``), the recap's changed count
    (-1 without a recap) and its wall time."""
    from role_runner import ansible_playbook

    tmp.mkdir(parents=True)
    (tmp / "vars.json").write_text(json.dumps({**variables, "ansible_python_interpreter": sys.executable}))
    (tmp / "play.yml").write_text(PUBLISH_PLAY)
    run_env = {"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), **(env or {})}
    began = time.monotonic()
    done = ansible_playbook(tmp, "-i", "localhost,", str(tmp / "play.yml"), env=run_env, cwd=tmp, timeout=600)
    recap = re.search(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)", done.stdout, re.M)
    return {"done": done, "changed": int(recap.group(1)) if recap else -1, "elapsed": time.monotonic() - began}
