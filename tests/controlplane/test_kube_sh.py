"""lab/kube.sh: start, status, stop (no process left), restart keeping the cluster, purge."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from controlplane_support import REPO


def _kube(state: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(REPO / "lab" / "kube.sh"), *args],
        env=dict(os.environ, GPUFABRIC_KUBE_DIR=str(state)),
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )


def _ours(state: Path) -> list:
    """Processes whose command line names this cluster's state directory."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(state) in cmdline:
                found.append(cmdline.split("\0")[0])
    return found


def test_lifecycle(cluster, tmp_path):
    state = tmp_path / "kube"
    started = _kube(state, "start")
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str(state / "kubeconfig")
    assert _kube(state, "kubeconfig", "admin").stdout.strip() == str(state / "admin.kubeconfig")
    status = _kube(state, "status")
    assert status.returncode == 0 and status.stdout.startswith("running server=https://127.0.0.1:")
    names = sorted(os.path.basename(p) for p in _ours(state))
    assert {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} <= set(names)

    kubectl = [str(cluster.bin / "kubectl"), "--kubeconfig", str(state / "admin.kubeconfig")]
    subprocess.run([*kubectl, "create", "configmap", "kept", "--from-literal=k=v"], check=True, capture_output=True)
    assert _kube(state, "start").returncode == 0  # already running: a no-op

    stopped = _kube(state, "stop")
    assert stopped.returncode == 0
    assert _ours(state) == []
    assert _kube(state, "status").returncode == 3

    # A restart is the same cluster: etcd's data and the PKI stay.
    assert _kube(state, "start").returncode == 0
    kept = subprocess.run(
        [*kubectl, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"], capture_output=True, text=True, check=False
    )
    assert kept.stdout == "v", kept.stderr

    assert _kube(state, "stop", "--purge").returncode == 0
    assert _ours(state) == []
    assert not state.exists()


def test_bad_arguments_are_refused(tmp_path):
    res = _kube(tmp_path / "kube", "ready", "on")
    assert res.returncode == 1
    assert "usage: lab/kube.sh start" in res.stderr
    res = _kube(tmp_path / "kube", "stop", "--now")
    assert res.returncode == 1 and "usage: lab/kube.sh stop [--purge]" in res.stderr
