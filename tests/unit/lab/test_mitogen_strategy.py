"""lab/strategy/mitogen_linear.py: Mitogen's linear strategy whose module scan compiles each
ansible.module_utils file once per run instead of once per module. The scan must list the same
files as Mitogen's own, and a second module that shares files with the first must not compile
them again (which fails when a new mitogen no longer compiles through the replaced name)."""

import builtins
import importlib.util
import sys
from pathlib import Path

import ansible.module_utils
import ansible_mitogen.module_finder as mitogen_finder  # mitogen is pinned in requirements.txt
import pytest

REPO = Path(__file__).resolve().parents[3]
MODULES = REPO / "plugins" / "modules"
SEARCH = (str(REPO / "plugins" / "module_utils"), str(Path(ansible.module_utils.__file__).parent))


@pytest.fixture
def strategy(monkeypatch):
    """The lab strategy module, loaded as Ansible loads it; Mitogen's compile is restored after."""
    monkeypatch.setattr(mitogen_finder, "compile", builtins.compile, raising=False)
    path = REPO / "lab" / "strategy" / "mitogen_linear.py"
    spec = importlib.util.spec_from_file_location("gpufabric_lab_mitogen_linear", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    module.compile_once.cache_clear()
    return module


def scan(name):
    fullname = f"ansible_collections.gpufabric.rollout.plugins.modules.{name}"
    return mitogen_finder.scan(fullname, str(MODULES / f"{name}.py"), SEARCH)


def test_is_mitogens_linear_strategy(strategy):
    import ansible_mitogen.strategy
    from ansible.plugins.strategy.linear import StrategyModule as Linear

    assert issubclass(strategy.StrategyModule, ansible_mitogen.strategy.StrategyMixin)
    assert issubclass(strategy.StrategyModule, Linear)
    assert mitogen_finder.compile is strategy.compile_once


def test_scan_lists_what_mitogen_lists_and_compiles_each_file_once(strategy, monkeypatch):
    with monkeypatch.context() as plain_mitogen:  # Mitogen's own scan, with the builtin compile
        plain_mitogen.setattr(mitogen_finder, "compile", builtins.compile)
        plain = {name: scan(name) for name in ("topology_facts", "gpudirect_facts")}
    assert mitogen_finder.compile is strategy.compile_once
    compiled = []

    def counting(source, filename, mode):
        compiled.append(filename)
        return builtins.compile(source, filename, mode)

    monkeypatch.setattr(strategy, "_builtin_compile", counting)
    first = scan("topology_facts")
    after_first = len(compiled)
    second = scan("gpudirect_facts")
    assert first == plain["topology_facts"] and second == plain["gpudirect_facts"]
    assert after_first == len(first) + 1  # the module and each file it reaches (basic.py and the rest)
    shared = {entry[0] for entry in first} & {entry[0] for entry in second}
    assert len(shared) > 20  # both reach ansible.module_utils.basic and what it imports
    # The second module compiles itself and only the files the first did not reach.
    assert compiled[after_first] == "ansible_collections.gpufabric.rollout.plugins.modules.gpudirect_facts"
    assert sorted(compiled[after_first + 1 :]) == sorted(name for name, _path, _pkg in second if name not in shared)
