"""The lookup gpufabric.rollout.module_utils_source: the roce role takes its boot-time engine's
files from it, found through the import system, instead of reaching out of its own folder
(role_path/../../plugins/module_utils)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError

from ansible_collections.gpufabric.rollout.plugins.lookup import module_utils_source as lookup

REPO = Path(__file__).resolve().parents[3]
ROCE_VARS = REPO / "roles" / "roce" / "vars" / "main.yml"


def test_each_engine_file_comes_back_as_the_collection_holds_it():
    files = yaml.safe_load(ROCE_VARS.read_text())["__roce_engine_files"]
    assert files
    got = lookup.LookupModule().run(files, variables={})
    assert got == [(REPO / "plugins" / "module_utils" / name).read_text() for name in files]


@pytest.mark.parametrize(
    "name,words",
    [
        ("../modules/plan.py", "is not a module_utils file name"),
        ("/etc/passwd", "is not a module_utils file name"),
        ("apply/qos_engine", "is not a module_utils file name"),
        ("apply/../../modules/plan.py", "is not a module_utils file name"),
        ("apply/no_such_file.py", "has no module_utils file apply/no_such_file.py"),
    ],
)
def test_a_name_outside_module_utils_or_of_no_file_is_refused(name, words):
    with pytest.raises(AnsibleError, match=words.replace(".", r"\.")):
        lookup.LookupModule().run([name], variables={})


def test_the_roce_role_stays_in_its_own_folder():
    text = "\n".join(p.read_text() for p in (REPO / "roles" / "roce").rglob("*.yml"))
    assert "role_path" not in text
    assert "gpufabric.rollout.module_utils_source" in text
