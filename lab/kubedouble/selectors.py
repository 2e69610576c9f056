"""Label and field selectors, as in list and watch query parameters."""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List

from .errors import ApiError

Matcher = Callable[[Dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split(expr: str) -> List[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def label_matcher(expr: str) -> Matcher:
    tests: List[Callable[[Dict[str, str]], bool]] = []
    for part in _split(expr or ""):
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)$", part)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                tests.append(lambda lb, k=key, v=val: lb.get(k) != v)
            else:
                tests.append(lambda lb, k=key, v=val: lb.get(k) == v)
            continue
        m = _SET_RE.match(part)
        if not m:
            raise ApiError(400, f"unable to parse requirement: found '{part}', expected: identifier")
        neg, key, op, values = m.groups()
        if op:
            vals = {v.strip() for v in values.split(",") if v.strip()}
            if op == "in":
                tests.append(lambda lb, k=key, vs=vals: k in lb and lb[k] in vs)
            else:
                tests.append(lambda lb, k=key, vs=vals: k not in lb or lb[k] not in vs)
        elif neg:
            tests.append(lambda lb, k=key: k not in lb)
        else:
            tests.append(lambda lb, k=key: k in lb)

    def match(obj: Dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(t(labels) for t in tests)

    return match


def _lookup(obj: Dict[str, Any], dotted: str) -> str:
    node: Any = obj
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_matcher(expr: str) -> Matcher:
    tests: List[Callable[[Dict[str, Any]], bool]] = []
    for part in _split(expr or ""):
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise ApiError(400, f"invalid selector: '{expr}'; can't understand '{part}'")
        path, op, val = m.groups()
        if op == "!=":
            tests.append(lambda o, p=path, v=val: _lookup(o, p) != v)
        else:
            tests.append(lambda o, p=path, v=val: _lookup(o, p) == v)
    return lambda obj: all(t(obj) for t in tests)


def selector_matches(selector: Dict[str, Any], labels: Dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions) against labels."""
    if not selector:
        return False
    for key, val in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != val:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, vals = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
