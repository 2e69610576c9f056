"""Helpers of the kubedouble tests: start/stop the double as a subprocess, fixtures, polling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Upstream CRDs live beside the checkout (shared/crds); they are read, never copied in.
SHARED_CRDS = REPO_ROOT.parent / "shared" / "crds"
VENV_BIN = REPO_ROOT / ".venv" / "bin"


class Double:
    """A running double: URL, kubeconfig, and small helpers around it."""

    def __init__(self, proc: subprocess.Popen, port: int, state_dir: Path) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.state_dir = state_dir
        self.kubeconfig = state_dir / "kubeconfig"

    def http(self, method: str, path: str, body: Any = None, content_type: str = "application/json"):
        """(status, parsed JSON body) of one raw HTTP request."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=data,
            headers={"Content-Type": content_type, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
                if resp.headers.get_content_type() != "application/json":
                    return resp.status, raw.decode()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw else None

    def set_ready(self, ready: bool) -> None:
        status, body = self.http("PUT", "/_double/ready", {"ready": ready})
        assert status == 200 and body == {"ready": ready}


def start_double(state_dir: Path, seeds: List[Path], extra: List[str] = ()) -> Double:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "lab"))
    cmd = [sys.executable, "-m", "kubedouble", "--state-dir", str(state_dir), *extra]
    for seed in seeds:
        cmd += ["--seed", str(seed)]
    log = open(state_dir / "kube.log", "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("kubedouble did not start: " + (state_dir / "kube.log").read_text())
        double = Double(proc, json.loads(line)["port"], state_dir)
        for _unused in range(100):
            try:
                if double.http("GET", "/readyz")[0] == 200:
                    return double
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("kubedouble did not answer")
    except BaseException:
        proc.kill()  # never leave a double behind
        proc.wait(timeout=10)
        raise


def stop_double(double: Double) -> None:
    double.proc.terminate()
    try:
        double.proc.wait(timeout=10)
    finally:
        if double.proc.poll() is None:
            double.proc.kill()


def load_yaml(name: str) -> Any:
    with open(FIXTURES / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def load_all(path: Path) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [d for d in yaml.safe_load_all(fh) if d]


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (AttributeError, TypeError, KeyError) as exc:  # status not written yet
            last = exc
            time.sleep(interval)
            continue
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")
