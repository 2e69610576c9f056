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

Usage: lab/link_collections.py        (run by `make venv`, with the venv's Python)
"""

import os
import sys
import sysconfig
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
LINKS = REPO / ".collections" / "ansible_collections"
TOOLING = {
    "containers.podman": "molecule's podman connection and the lab's podman transport",
    "awx.awx": "playbooks/awx.yml (AWX objects as code)",
}


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
