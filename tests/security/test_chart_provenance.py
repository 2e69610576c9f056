"""Finding 6 (charts): the operators' and the CSI drivers' charts were installed from their repositories
as served, never checked, although each runs cluster-wide with the rights its templates grant. Whoever
controls the repository (or the path to it) chose what the cluster ran.

Now a chart from a repository is pulled with `helm pull --verify` against the keyring the inventory
names (network_operator_chart_keyring, gpu_operator_chart_keyring, storage_csi_drivers.*.chart_keyring)
and installed from the verified archive; the plan's summary says for every chart whether it is verified.
The test serves a chart repository signed with a key made here (helm package --sign) and runs the
collection's own task file (k8s_publish chart_pull.yml) against it, as the roles include it.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster_summary as _cluster_summary

REPO = Path(__file__).resolve().parents[2]
HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "lab" / "charts" / "gpufabric-demo"


def _gpg(home: Path, *argv: str) -> str:
    batch = ["--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
    return subprocess.run(
        ["gpg", "--homedir", str(home), *batch, *argv], check=True, capture_output=True, text=True
    ).stdout


def _key(home: Path, name: str) -> dict:
    home.mkdir(mode=0o700)
    _gpg(home, "--quick-generate-key", f"{name} <{name}@example.invalid>", "rsa2048", "sign", "30d")
    _gpg(home, "--export-secret-keys", "-o", str(home / "secring.gpg"))
    _gpg(home, "--export", "-o", str(home / "pubring.gpg"))
    return {"name": name, "secret": home / "secring.gpg", "public": home / "pubring.gpg"}


@pytest.fixture(scope="module")
def signed_repo(tmp_path_factory):
    """A chart repository with the lab's demo chart signed by the vendor's key, and the attacker's key."""
    for tool, hint in ((HELM, "make tools"), (Path(shutil.which("gpg") or "/nonexistent"), "make tools (mk/repo.mk)")):
        if not tool.exists():
            pytest.fail(f"{tool.name} is missing: {hint} installs it")
    base = tmp_path_factory.mktemp("chart-repo")
    vendor, attacker = _key(base / "vendor", "vendor"), _key(base / "attacker", "attacker")
    served = base / "served"
    served.mkdir()
    subprocess.run(
        [
            str(HELM),
            "package",
            "--sign",
            "--key",
            "vendor",
            "--keyring",
            str(vendor["secret"]),
            str(CHART),
            "-d",
            str(served),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    subprocess.run([str(HELM), "repo", "index", str(served), "--url", url], check=True, capture_output=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    yield {
        "url": url,
        "served": served,
        "vendor": vendor,
        "attacker": attacker,
        "name": chart["name"],
        "version": str(chart["version"]),
    }
    httpd.shutdown()


def _pull(tmp_path: Path, repo: dict, keyring: Path, check: bool = False) -> subprocess.CompletedProcess:
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {
                    "ansible.builtin.include_role": {
                        "name": "gpufabric.rollout.k8s_publish",
                        "tasks_from": "chart_pull.yml",
                    },
                    "vars": {
                        "k8s_publish_chart": {
                            "name": repo["name"],
                            "repo_url": repo["url"],
                            "version": repo["version"],
                            "keyring": str(keyring),
                            "helm_binary": str(HELM),
                        }
                    },
                },
                {
                    "ansible.builtin.copy": {
                        "dest": str(tmp_path / "pulled.txt"),
                        "content": "{{ __k8s_publish_chart_archive }}",
                    },
                    "check_mode": False,
                },
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = dict(
        os.environ,
        ANSIBLE_NOCOLOR="1",
        TMPDIR=str(tmp_path / "tmp"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        HELM_CACHE_HOME=str(tmp_path / "helm-cache"),
        HELM_CONFIG_HOME=str(tmp_path / "helm-config"),
        HELM_DATA_HOME=str(tmp_path / "helm-data"),
    )
    env.pop("ANSIBLE_CONFIG", None)
    argv = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "play.yml",
    ] + (["--check"] if check else [])
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_chart_signed_by_the_pinned_key_is_pulled_and_verified(signed_repo, tmp_path):
    run = _pull(tmp_path, signed_repo, signed_repo["vendor"]["public"])
    assert run.returncode == 0, run.stdout[-3000:]
    archive = Path((tmp_path / "pulled.txt").read_text())
    assert archive.name == f"{signed_repo['name']}-{signed_repo['version']}.tgz"
    assert oct(archive.parent.stat().st_mode & 0o777) == "0o700", "a directory only the controller's user reads"
    assert archive.read_bytes() == (signed_repo["served"] / archive.name).read_bytes()


def test_a_chart_signed_by_another_key_is_refused(signed_repo, tmp_path):
    run = _pull(tmp_path, signed_repo, signed_repo["attacker"]["public"])
    assert run.returncode != 0 and not (tmp_path / "pulled.txt").exists()
    assert "Pull the chart and verify its provenance" in run.stdout


def test_a_chart_changed_after_signing_is_refused_in_check_mode_too(signed_repo, tmp_path):
    served = signed_repo["served"] / f"{signed_repo['name']}-{signed_repo['version']}.tgz"
    original = served.read_bytes()
    try:
        # the attacker's chart under the signed name: the .prov's SHA-256 no longer matches
        work = tmp_path / "evil"
        with tarfile.open(served) as tar:
            tar.extractall(work, filter="data")
        chart_dir = work / signed_repo["name"]
        (chart_dir / "templates" / "evil.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil}\n")
        subprocess.run([str(HELM), "package", str(chart_dir), "-d", str(work)], check=True, capture_output=True)
        served.write_bytes((work / served.name).read_bytes())
        run = _pull(tmp_path, signed_repo, signed_repo["vendor"]["public"], check=True)
        assert run.returncode != 0 and not (tmp_path / "pulled.txt").exists(), run.stdout[-2000:]
    finally:
        served.write_bytes(original)


def test_a_repository_without_provenance_is_refused(signed_repo, tmp_path):
    prov = signed_repo["served"] / f"{signed_repo['name']}-{signed_repo['version']}.tgz.prov"
    kept = prov.read_bytes()
    prov.unlink()
    try:
        run = _pull(tmp_path, signed_repo, signed_repo["vendor"]["public"])
        assert run.returncode != 0 and not (tmp_path / "pulled.txt").exists()
    finally:
        prov.write_bytes(kept)


def _role_tasks(role: str) -> str:
    return (REPO / "roles" / role / "tasks" / "apply.yml").read_text()


@pytest.mark.parametrize("role", ["network_operator", "gpu_operator", "storage_csi"])
def test_every_chart_install_goes_through_the_one_release_entry_point(role):
    """Each role installs its charts through k8s_publish helm_release.yml (which pulls and verifies a
    chart given a keyring), with its keyring passed, and runs no Helm install of its own."""
    text = _role_tasks(role)
    assert "tasks_from: helm_release.yml" in text and "chart_keyring:" in text
    assert "kubernetes.core.helm:" not in text and "kubernetes.core.helm_pull" not in text


def test_the_release_entry_point_installs_the_verified_archive():
    text = (REPO / "roles/k8s_publish/tasks/helm_release.yml").read_text()
    assert "include_tasks: chart_pull.yml" in text
    assert "__k8s_publish_chart_archive if __k8s_publish_verified" in text
    assert text.count("kubernetes.core.helm:") == 1


def test_the_summary_says_which_charts_are_verified(tmp_path):
    keyring = tmp_path / "vendor.gpg"
    keyring.write_bytes(b"")
    values = {
        "plan_cluster_roles": ["network_operator", "gpu_operator"],
        "network_operator_chart_name": "network-operator",
        "network_operator_chart_version": "26.4.1",
        "network_operator_chart_repo_url": "https://helm.ngc.nvidia.com/nvidia",
        "network_operator_chart_path": "",
        "network_operator_chart_keyring": "",
        "gpu_operator_chart_name": "gpu-operator",
        "gpu_operator_chart_version": "v26.7.0",
        "gpu_operator_chart_repo_url": "https://helm.ngc.nvidia.com/nvidia",
        "gpu_operator_chart_path": "",
        "gpu_operator_chart_keyring": str(keyring),
    }
    storage = {
        "drivers": {
            "nfs": {
                "kind": "helm",
                "install": True,
                "chart_name": "csi-driver-nfs",
                "chart_version": "4.13.4",
                "chart_repo_url": "https://example.invalid/charts",
                "chart_path": "",
                "chart_keyring": "",
            }
        }
    }
    charts = _cluster_summary.chart_sources(values, storage)
    by_name = {c["chart"]: c["provenance"] for c in charts}
    assert by_name["network-operator"] == "NOT verified (network_operator_chart_keyring is empty)"
    assert by_name["gpu-operator"].startswith("verified against its provenance")
    assert by_name["csi-driver-nfs"] == "NOT verified (storage_csi_drivers.nfs.chart_keyring is empty)"
