"""Loading the collection's filters is cheap, and their documented errors still reach the playbook.

Ansible imports every filter file of gpufabric.rollout to find one of its filters, in each worker
it forks. The filter files therefore import their module_utils inside the functions that use them
(plain import statements, which every tool sees), never at load time."""

import ast
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


def test_no_filter_file_imports_module_utils_at_load_time():
    """Statically: a module-level import of module_utils in any filter file (or in plugin_utils, which
    they import) would put it back into every worker's load of the filters."""
    offenders = []
    for path in sorted((REPO / "plugins/filter").glob("*.py")) + sorted((REPO / "plugins/plugin_utils").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [f"{path.name}: {name}" for name in names if name.startswith(MODULE_UTILS.rstrip("."))]
    assert offenders == []


def test_documented_errors_become_filter_errors():
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


def test_every_module_utils_name_a_filter_reads_exists():
    """Statically: every module_utils name a filter function imports, and each ``_alias.name`` it reads
    from an imported module, exists (a name moved to another module fails here, not on the first run
    that calls the filter)."""
    import importlib

    missing = []
    for path in sorted((REPO / "plugins/filter").glob("*.py")) + sorted((REPO / "plugins/plugin_utils").glob("*.py")):
        for func in ast.walk(ast.parse(path.read_text())):
            if not isinstance(func, ast.FunctionDef):
                continue
            modules = {}
            for node in ast.walk(func):
                if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MODULE_UTILS)):
                    continue
                parent = importlib.import_module(node.module)
                for alias in node.names:
                    try:
                        modules[alias.asname or alias.name] = importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        if not hasattr(parent, alias.name):
                            missing.append(f"{path.name}:{func.name}: {node.module}.{alias.name}")
            for node in ast.walk(func):
                read = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                if read and not hasattr(modules[node.value.id], node.attr):
                    missing.append(f"{path.name}:{func.name}: {modules[node.value.id].__name__}.{node.attr}")
    assert missing == []
