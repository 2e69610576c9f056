"""lab/link_collections.py: the checkout's Ansible sees only .collections (ansible.cfg sets
collections_scan_sys_path = false), so every collection the project's YAML or Python names must
be one the script links, and the links it makes must resolve."""

import importlib.util
import os
import re
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("lab_link_collections", REPO / "lab" / "link_collections.py")
LINK = importlib.util.module_from_spec(spec)
spec.loader.exec_module(LINK)

INSTALLED = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections"
SEARCHED = ("roles", "playbooks", "plugins", "inventory", "lab", "molecule", ".config", "site.yml")
SUFFIXES = (".yml", ".yaml", ".py", ".j2")
FQCN = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*")
PY_IMPORT = re.compile(r"ansible_collections\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)")
COMMENT = re.compile(r"(^|\s)#.*$", re.MULTILINE)


def referenced():
    """ns.coll of every collection the venv has installed (or the script unpacks, ARCHIVED) that
    the project's YAML names as a dotted triple outside comments (other triples are variable paths
    such as plan.doca_ofed.packages), or its Python imports from ansible_collections."""
    found = {}
    for top in SEARCHED:
        base = REPO / top
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.suffix in SUFFIXES]
        for path in files:
            if ".molecule" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            pairs = PY_IMPORT.findall(text) if path.suffix == ".py" else FQCN.findall(COMMENT.sub("", text))
            for namespace, name in pairs:
                fqcn = f"{namespace}.{name}"
                if (INSTALLED / namespace / name / "MANIFEST.json").is_file() or fqcn in LINK.ARCHIVED:
                    found.setdefault(f"{namespace}.{name}", str(path.relative_to(REPO)))
    return found


def test_every_collection_the_project_names_is_linked():
    found = referenced()
    # The scan must see what it is meant to see, or the check below would pass on nothing.
    assert {"kubernetes.core", "community.general", "ansible.posix", "containers.podman", "awx.awx"} <= set(found)
    missing = {name: where for name, where in found.items() if name not in LINK.wanted()}
    assert not missing, f"named, not linked by lab/link_collections.py (add to requirements.yml or TOOLING): {missing}"


def test_requirements_come_first_and_tooling_is_added_once():
    names = LINK.wanted()
    assert names[:3] == ["kubernetes.core", "community.general", "ansible.posix"]
    assert len(names) == len(set(names))
    assert set(LINK.TOOLING) <= set(names)


def test_links_are_relative_resolve_and_a_second_run_changes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(LINK, "LINKS", tmp_path / "ansible_collections")
    LINK.main()
    first = capsys.readouterr().out
    for name in LINK.wanted():
        link = tmp_path / "ansible_collections" / Path(*name.split("."))
        assert link.is_symlink() and not os.path.isabs(os.readlink(link))
        assert (link / "MANIFEST.json").is_file()
        assert f"linked {name}" in first
    LINK.main()
    assert capsys.readouterr().out == ""


def test_a_collection_the_venv_lacks_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(LINK, "LINKS", tmp_path / "ansible_collections")
    monkeypatch.setattr(LINK, "TOOLING", {"nosuch.thing": "a test"})
    with pytest.raises(SystemExit, match=r"nosuch\.thing is not installed"):
        LINK.main()
