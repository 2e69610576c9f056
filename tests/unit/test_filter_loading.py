"""Loading the collection's filters is cheap, and their documented errors still reach the playbook.

Ansible imports every filter file of gpufabric.rollout to find one of its filters, in each worker
it forks; plugin_utils/_lazy keeps module_utils out of that import (see its docstring)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import k8s_prune_queries
from ansible_collections.gpufabric.rollout.plugins.filter.doca import FilterModule as DocaFilters
from ansible_collections.gpufabric.rollout.plugins.filter.nccl import nccl_conf_parse
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._lazy import module_utils

REPO = Path(__file__).resolve().parents[2]
FILTERS = "ansible_collections.gpufabric.rollout.plugins.filter."
MODULE_UTILS = "ansible_collections.gpufabric.rollout.plugins.module_utils."

# A fresh interpreter: Ansible's plugin loader finds one filter, as a worker does.
PROBE = """
import json, sys
from ansible.plugins.loader import init_plugin_loader, filter_loader
init_plugin_loader([sys.argv[1]])
before = set(sys.modules)
found = filter_loader.get("gpufabric.rollout.packages_missing")
loaded = sorted(name for name in set(sys.modules) - before if name.startswith("ansible_collections.gpufabric"))
print(json.dumps({"found": found is not None, "loaded": loaded}))
"""


def test_finding_one_filter_loads_every_filter_file_and_no_module_utils():
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(REPO / ".collections")],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")),
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["found"]
    filter_files = {
        f"ansible_collections.gpufabric.rollout.plugins.filter.{p.stem}" for p in (REPO / "plugins/filter").glob("*.py")
    }
    # The loader did import every filter file (what makes an eager import there expensive) ...
    assert filter_files <= set(result["loaded"])
    # ... and none of them imported a module_utils module.
    assert [name for name in result["loaded"] if name.startswith(MODULE_UTILS)] == []


def test_a_lazy_module_imports_on_first_read_and_is_the_real_module():
    packages = module_utils("shared.packages")
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

    assert packages.kernel_headers is _packages.kernel_headers
    with pytest.raises(ModuleNotFoundError):
        module_utils("_no_such_module").kernel_headers("Debian", "6.1.0")


def test_documented_errors_named_by_string_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match="kind"):
        k8s_prune_queries(["NoSuchKind"])
    with pytest.raises(AnsibleFilterError, match="expected text"):
        nccl_conf_parse(42)  # _parse.ParseError
    doca_dnf_repo = DocaFilters().filters()["doca_dnf_repo"]
    with pytest.raises(AnsibleFilterError, match="doca_ofed_repo_id"):
        doca_dnf_repo("https://example.invalid/doca/", "", repo_id="bad id")  # _doca.DocaError


def test_other_errors_pass_through_unchanged():
    with pytest.raises(TypeError):
        k8s_prune_queries(5)
