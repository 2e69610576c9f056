"""Issue 37, finding 2 (the identity check): k8s_access on the real control plane warns, naming the
rules, when the kubeconfig can do more than the shipped RBAC (the lab's administrator), stays
silent for the collection's least-privilege identity, and returns the user and the API server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RULES = [{"resources": ["nodes"], "verbs": ["get"]}]


def _k8s_access(tmp: Path, kubeconfig: Path) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOCAL_TEMP=str(tmp),
        TMPDIR=str(tmp),
        ANSIBLE_NOCOLOR="1",
    )
    args = json.dumps({"kubeconfig": str(kubeconfig), "rules": RULES, "purpose": "test"})
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible"),
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-m",
            "gpufabric.rollout.k8s_access",
            "-a",
            args,
        ],
        cwd=str(tmp),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_an_admin_kubeconfig_is_warned_about_naming_the_rules(cluster, tmp_path):
    result = _k8s_access(tmp_path / "admin", cluster.admin)
    assert result["server"].startswith("https://")
    assert "* *" in " ".join(result["excess"]), result["excess"]
    warnings = " ".join(result.get("warnings") or [])
    assert "can do more than the shipped RBAC" in warnings and result["server"] in warnings


def test_the_least_privilege_identity_is_not_warned_about(cluster, tmp_path):
    result = _k8s_access(tmp_path / "lp", cluster.kubeconfig)
    assert result["user"]["username"] == "gpufabric-rollout"
    assert result["excess"] == []
    assert not [w for w in result.get("warnings") or [] if "shipped RBAC" in w]
    assert result["server"].startswith("https://")
