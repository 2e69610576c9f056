"""lab/kube.sh: start (idempotent, seeds, kubeconfig), status, readiness switch, stop (no process
left behind), with GPUFABRIC_KUBE_DIR pointing at a private state directory."""

from __future__ import annotations

import os
import subprocess

import yaml
from kubedouble_support import FIXTURES, REPO_ROOT

KUBE_SH = REPO_ROOT / "lab" / "kube.sh"


def _run(state, *args, check=True):
    env = dict(os.environ, GPUFABRIC_KUBE_DIR=str(state))
    proc = subprocess.run([str(KUBE_SH), *args], check=False, capture_output=True, text=True, env=env, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"kube.sh {' '.join(args)}: {proc.stderr}")
    return proc


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
        return fh.read().split()[2] != "Z"


def test_start_status_ready_stop(tmp_path, kubectl):
    state = tmp_path / "kube"
    try:
        out = _run(state, "start", "--seed", str(FIXTURES / "seed.yml"))
        assert out.stdout.strip() == str(state / "kubeconfig")
        pid = int((state / "pid").read_text())
        conf = yaml.safe_load((state / "kubeconfig").read_text())
        assert conf["current-context"] == "gpufabric-lab"
        server = conf["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        assert conf["users"][0]["user"]["token"]
        again = _run(state, "start")
        assert again.stdout.strip() == str(state / "kubeconfig") and "already running" in again.stderr
        assert int((state / "pid").read_text()) == pid
        status = _run(state, "status").stdout
        assert f"pid={pid}" in status and server in status and '"ready":true' in status
        _run(state, "ready", "off")
        assert '"ready":false' in _run(state, "status").stdout
        nodes = subprocess.run(
            [*kubectl.argv[:1], "--kubeconfig", str(state / "kubeconfig"), "get", "nodes", "-o", "name"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        assert nodes == ["node/seed-cpu-c", "node/seed-gpu-a", "node/seed-gpu-b"]
    finally:
        _run(state, "stop")
    assert not _alive(pid)
    assert not (state / "pid").exists()
    stopped = _run(state, "status", check=False)
    assert stopped.returncode == 3 and stopped.stdout.strip() == "stopped"
    assert "not running" in _run(state, "stop").stderr


def test_bad_seed_fails_start(tmp_path):
    seed = tmp_path / "bad.yml"
    seed.write_text("apiVersion: v1\nkind: Nope\nmetadata: {name: x}\n")
    out = _run(tmp_path / "kube", "start", "--seed", str(seed), check=False)
    assert out.returncode != 0 and "unknown kind" in out.stderr
    assert not (tmp_path / "kube" / "pid").exists()
