"""Give the checkout's Ansible exactly the collections the project uses.

The venv installs the `ansible` package, which carries about a hundred collections (Galaxy is
not reachable from the lab machines). ansible.cfg sets collections_scan_sys_path = false, so
Ansible sees only .collections/: the checkout itself (gpufabric.rollout) and the links this
script makes there to the venv's copies of
  - every collection requirements.yml names (the collection's own dependencies), and
  - TOOLING below: collections that only the lab, molecule and playbooks/awx.yml use.
Why it matters: Mitogen lists every installed collection before each collection module it
runs (ansible_mitogen.planner), in a fresh worker per task: 12 % of the profile samples of a
no-op site.yml on the lab, and about 6 of its 57 seconds. A module from an undeclared collection
now fails in the lab instead of passing there and failing in the execution environment.

awx.awx left the `ansible` package in Ansible 14 (deprecated in 13). Until it is on a reachable
index again it comes from the last `ansible` release that carries it (ARCHIVED): pip downloads
that wheel once per machine, checked against its sha256, and only the collection's directory is
unpacked into the lab cache (GPUFABRIC_CACHE_DIR, like lab/common.sh), from where it is linked.

Usage: lab/link_collections.py        (run by `make venv`, with the venv's Python)
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
LINKS = REPO / ".collections" / "ansible_collections"
TOOLING = {
    "containers.podman": "molecule's podman connection and the lab's podman transport",
    "awx.awx": "playbooks/awx.yml (AWX objects as code)",
}
# Collections the current `ansible` package no longer carries: name -> (the last `ansible`
# release with it, that wheel's sha256 as PyPI lists it, the collection's version in it).
ARCHIVED = {
    "awx.awx": ("ansible==13.8.0", "daf9c9a2850bbc6c098ba3368aeba99d4ae37c90bca47f974dc19342c0571361", "24.6.1"),
}


def cache_dir():
    """The lab cache (lab/common.sh LAB_CACHE)."""
    if os.environ.get("GPUFABRIC_CACHE_DIR"):
        return Path(os.environ["GPUFABRIC_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpufabric-rollout"


def archived(name):
    """The unpacked copy of an ARCHIVED collection, made once per machine from a verified wheel."""
    requirement, sha256, version = ARCHIVED[name]
    namespace, collection = name.split(".")
    root = cache_dir() / "collections" / f"{name}-{version}-{sha256[:12]}"
    source = root / "ansible_collections" / namespace / collection
    if (root / ".complete").is_file():
        return source
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        pinned = Path(tmp) / "requirements.txt"
        pinned.write_text(f"{requirement} --hash=sha256:{sha256}\n", encoding="utf-8")
        print(f"fetching {name} {version} from {requirement} (sha256 checked)", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--only-binary=:all:", "--require-hashes", "-r", str(pinned), "--dest", tmp],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(tmp).glob("*.whl")
        prefix = f"ansible_collections/{namespace}/{collection}/"
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(prefix)]
            if not members:
                sys.exit(f"lab/link_collections.py: {requirement} does not carry {name}")
            archive.extractall(unpacked, members)
        shutil.rmtree(root, ignore_errors=True)
        unpacked.rename(root)
    (root / ".complete").touch()
    return source


def wanted():
    """Collection names from requirements.yml, then the tooling ones."""
    data = yaml.safe_load((REPO / "requirements.yml").read_text(encoding="utf-8"))
    names = [entry["name"] for entry in data["collections"]]
    return names + [name for name in TOOLING if name not in names]


def main():
    installed = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections"
    for name in wanted():
        namespace, collection = name.split(".")
        source = installed / namespace / collection
        if not (source / "MANIFEST.json").is_file() and name in ARCHIVED:
            source = archived(name)
        if not (source / "MANIFEST.json").is_file():
            sys.exit(f"lab/link_collections.py: {name} is not installed in {installed} (requirements.txt: ansible)")
        link = LINKS / namespace / collection
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(source, link.parent)
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        print(f"linked {name} -> {target}")


if __name__ == "__main__":
    main()
