"""plugins/module_utils: every module imports, every import of the collection's module_utils sits at
module top, and those imports form no circle (a circle dodged with function-local imports, like
the one intent.rules and intent.storage had, fails both checks)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE_UTILS = REPO / "plugins" / "module_utils"
PACKAGE = "ansible_collections.gpufabric.rollout.plugins.module_utils"


def module_name(root: Path, path: Path) -> str:
    """'intent/rules.py' -> 'intent.rules'; 'intent/__init__.py' -> 'intent'."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> Dict[str, Path]:
    return {module_name(root, p): p for p in sorted(root.rglob("*.py"))}


def targets(node: ast.AST, known: Set[str]) -> List[str]:
    """The module_utils modules an import statement loads (names relative to module_utils):
    ``from pkg.intent import storage`` loads intent.storage, ``from pkg.intent.values import in_range``
    loads intent.values, ``import pkg.shared.parse`` loads shared.parse."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name.startswith(PACKAGE + ".")]
        return [n[len(PACKAGE) + 1 :] for n in names if n[len(PACKAGE) + 1 :] in known]
    if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
        return []
    if node.module != PACKAGE and not node.module.startswith(PACKAGE + "."):
        return []
    base = node.module[len(PACKAGE) + 1 :]
    out = []
    for alias in node.names:
        name = f"{base}.{alias.name}" if base else alias.name
        if name in known:
            out.append(name)
        elif base in known:
            out.append(base)
    return sorted(set(out))


def scan(root: Path) -> Tuple[Dict[str, Set[str]], List[str]]:
    """(import graph between module_utils modules, function-local or nested imports of them)."""
    known = set(modules(root))
    graph: Dict[str, Set[str]] = {}
    nested: List[str] = []
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = set(id(n) for n in tree.body)
        graph[name] = set()
        for node in ast.walk(tree):
            found = targets(node, known)
            if not found:
                continue
            if id(node) not in top:
                nested.append(f"{path.relative_to(root)}:{node.lineno} imports {', '.join(found)} below module top")
            graph[name].update(t for t in found if t != name)
    return graph, nested


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each as a sorted list."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_utils_import_is_at_module_top():
    _graph, nested = scan(MODULE_UTILS)
    assert nested == []


def test_module_utils_imports_form_no_circle():
    graph, _nested = scan(MODULE_UTILS)
    assert cycles(graph) == []
    # the scan sees the imports at all: the rule files import their shared checks
    assert "intent.values" in graph["intent.rules"] and "intent.values" in graph["intent.storage"]
    assert "intent.storage" in graph["intent.rules"]


@pytest.mark.parametrize("name", sorted(modules(MODULE_UTILS)))
def test_every_module_utils_module_imports(name):
    importlib.import_module(f"{PACKAGE}.{name}" if name else PACKAGE)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_checks_see_a_circle_and_a_local_import(tmp_path):
    """The shape this replaced: rules imports storage inside a function, storage imports rules."""
    write(tmp_path, "__init__.py", "")
    write(tmp_path, "intent/__init__.py", "")
    write(
        tmp_path,
        "intent/rules.py",
        "def storage_rules(values, problems):\n"
        f"    from {PACKAGE}.intent import storage as _storage\n"
        "    _storage.storage_rules(values, problems)\n",
    )
    write(tmp_path, "intent/storage.py", f"from {PACKAGE}.intent.rules import in_range\n")
    write(tmp_path, "shared/parse.py", "import re\n")
    write(tmp_path, "plan/node.py", f"import {PACKAGE}.shared.parse\nfrom {PACKAGE}.intent import rules\n")
    graph, nested = scan(tmp_path)
    assert nested == ["intent/rules.py:2 imports intent.storage below module top"]
    assert graph["plan.node"] == {"shared.parse", "intent.rules"}
    assert cycles(graph) == [["intent.rules", "intent.storage"]]
