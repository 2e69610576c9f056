"""Server-side apply: field sets, managedFields (FieldsV1), conflicts, force and field removal.

A field set is a set of paths; a path is a tuple of steps: `f:<name>` (map field),
`k:<json of merge keys>` (item of a keyed list), `v:<json>` (member of a set list).
Leaves are scalars, atomic lists and empty maps; keyed list items are also recorded as nodes
(FieldsV1's `.` entry), so an applier that stops listing an item removes it.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional, Set, Tuple

from .errors import ApiError
from .patch import ListPolicy, item_key

Path = Tuple[str, ...]
MISSING = object()
_META_TRACKED = ("labels", "annotations", "finalizers", "ownerReferences")


def _kjson(keys: Tuple[str, ...], values: Tuple[Any, ...]) -> str:
    return json.dumps(dict(zip(keys, values)), separators=(",", ":"), sort_keys=True)


def fieldset(obj: Dict[str, Any], policy: ListPolicy, include_status: bool) -> Set[Path]:
    """Paths an object sets (metadata limited to labels, annotations, finalizers, ownerReferences)."""
    out: Set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            if isinstance(value, dict):
                for mkey in _META_TRACKED:
                    if mkey in value and value[mkey] is not None:
                        _collect(value[mkey], ("f:metadata", "f:" + mkey), ("metadata", mkey), policy, out)
            continue
        if key == "status" and not include_status:
            continue
        _collect(value, ("f:" + key,), (key,), policy, out)
    return out


def _collect(value: Any, path: Path, names: Tuple[str, ...], policy: ListPolicy, out: Set[Path]) -> None:
    if isinstance(value, dict):
        # An empty map owns nothing (the server always emits empty spec/status structs).
        for key, child in value.items():
            _collect(child, (*path, "f:" + key), (*names, key), policy, out)
        return
    if isinstance(value, list) and value:
        strategy = policy(names, value)
        if strategy == "set":
            for item in value:
                out.add((*path, "v:" + json.dumps(item, separators=(",", ":"))))
            return
        if strategy:
            keys = tuple(strategy)
            if all(item_key(i, keys) is not None for i in value):
                for item in value:
                    step = "k:" + _kjson(keys, item_key(item, keys))
                    out.add((*path, step))
                    for ckey, child in item.items():
                        _collect(child, (*path, step, "f:" + ckey), names, policy, out)
                return
    out.add(path)


def get(obj: Any, path: Path) -> Any:
    node = obj
    for step in path:
        kind, _unused, arg = step.partition(":")
        if kind == "f":
            if not isinstance(node, dict) or arg not in node:
                return MISSING
            node = node[arg]
        elif kind == "k":
            want = json.loads(arg)
            if not isinstance(node, list):
                return MISSING
            node = next(
                (i for i in node if isinstance(i, dict) and all(i.get(k) == v for k, v in want.items())), MISSING
            )
            if node is MISSING:
                return MISSING
        elif kind == "v":
            want = json.loads(arg)
            if not isinstance(node, list) or want not in node:
                return MISSING
            node = want
    return node


def remove(obj: Any, path: Path) -> None:
    parent = get(obj, path[:-1]) if len(path) > 1 else obj
    if parent is MISSING:
        return
    kind, _unused, arg = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(arg, None)
    elif kind == "k" and isinstance(parent, list):
        want = json.loads(arg)
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in want.items()))]
    elif kind == "v" and isinstance(parent, list):
        want = json.loads(arg)
        parent[:] = [i for i in parent if i != want]


def display(path: Path) -> str:
    """`.spec.containers[name="nginx"].image`, as the server prints conflicting fields."""
    out = ""
    for step in path:
        kind, _unused, arg = step.partition(":")
        if kind == "f":
            out += "." + arg
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(arg).items()) + "]"
        else:
            out += f"[={arg}]"
    return out


def encode(paths: Set[Path]) -> Dict[str, Any]:
    """A field set as FieldsV1 JSON."""
    root: Dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for step in path:
            node = node.setdefault(step, {})
        if path and path[-1].startswith("k:"):
            node.setdefault(".", {})
    return root


def decode(fields: Dict[str, Any], prefix: Path = ()) -> Set[Path]:
    out: Set[Path] = set()
    for key, child in (fields or {}).items():
        if key == ".":
            out.add(prefix)
            continue
        path = (*prefix, key)
        if not child or child == {".": {}}:
            out.add(path)
        else:
            out |= decode(child, path)
    return out


def merge_apply(live: Any, config: Any, policy: ListPolicy, names: Tuple[str, ...] = ()) -> Any:
    """Merge an applied configuration into the live object: maps merge, keyed lists merge by key."""
    if not isinstance(config, dict) or not isinstance(live, dict):
        return copy.deepcopy(config)
    out = copy.deepcopy(live)
    for key, value in config.items():
        sub = (*names, key) if not (names == () and key == "metadata") else ("metadata",)
        if isinstance(value, dict):
            out[key] = merge_apply(out.get(key), value, policy, sub)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            strategy = policy(sub, value) if value else None
            if strategy == "set":
                merged = list(out[key])
                merged += [v for v in value if v not in merged]
                out[key] = merged
            elif strategy:
                keys = tuple(strategy)
                merged = copy.deepcopy(out[key])
                for item in value:
                    want = item_key(item, keys)
                    idx = next(
                        (i for i, cur in enumerate(merged) if want is not None and item_key(cur, keys) == want), None
                    )
                    if idx is None:
                        merged.append(copy.deepcopy(item))
                    else:
                        merged[idx] = merge_apply(merged[idx], item, policy, sub)
                out[key] = merged
            else:
                out[key] = copy.deepcopy(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class Managed:
    """The managedFields of one object, as (manager, operation, subresource) -> field set."""

    def __init__(self, entries: Optional[List[Dict[str, Any]]]) -> None:
        self.entries: List[Dict[str, Any]] = []
        self.sets: List[Set[Path]] = []
        for entry in entries or []:
            self.entries.append(dict(entry))
            self.sets.append(decode(entry.get("fieldsV1") or {}))

    def _find(self, manager: str, operation: str, subresource: str) -> int:
        for i, entry in enumerate(self.entries):
            if (entry.get("manager"), entry.get("operation"), entry.get("subresource", "")) == (
                manager,
                operation,
                subresource,
            ):
                return i
        return -1

    def _set(
        self, manager: str, operation: str, subresource: str, paths: Set[Path], api_version: str, now: str
    ) -> None:
        idx = self._find(manager, operation, subresource)
        if idx < 0:
            if not paths:
                return
            entry = {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": now,
                "fieldsType": "FieldsV1",
            }
            if subresource:
                entry["subresource"] = subresource
            self.entries.append(entry)
            self.sets.append(set())
            idx = len(self.entries) - 1
        if self.sets[idx] != paths:
            self.sets[idx] = set(paths)
            self.entries[idx]["time"] = now
            self.entries[idx]["apiVersion"] = api_version

    def render(self) -> List[Dict[str, Any]]:
        out = []
        for entry, paths in zip(self.entries, self.sets):
            if not paths:
                continue
            entry = dict(entry)
            entry["fieldsV1"] = encode(paths)
            out.append(entry)
        return out

    def others(self, manager: str, subresource: str) -> List[Tuple[int, Dict[str, Any], Set[Path]]]:
        return [
            (i, e, s)
            for i, (e, s) in enumerate(zip(self.entries, self.sets))
            if e.get("manager") != manager and e.get("subresource", "") == subresource
        ]

    def record_update(
        self,
        old: Optional[Dict[str, Any]],
        new: Dict[str, Any],
        manager: str,
        subresource: str,
        policy: ListPolicy,
        api_version: str,
        now: str,
    ) -> None:
        """An Update takes the fields it set or changed from other managers; removed fields are freed."""
        status_only = subresource == "status"
        old_set = _scoped(fieldset(old or {}, policy, True), status_only)
        new_set = _scoped(fieldset(new, policy, True), status_only)
        changed = {p for p in new_set if old is None or get(old, p) != get(new, p)}
        removed = old_set - new_set
        for i, _entry, paths in list(self.others(manager, subresource)) + self._mine(manager, subresource):
            self.sets[i] = paths - changed - removed
        idx = self._find(manager, "Update", subresource)
        mine = set(self.sets[idx]) if idx >= 0 else set()
        self._set(manager, "Update", subresource, (mine | changed) - removed, api_version, now)

    def _mine(self, manager: str, subresource: str) -> List[Tuple[int, Dict[str, Any], Set[Path]]]:
        return [
            (i, e, s)
            for i, (e, s) in enumerate(zip(self.entries, self.sets))
            if e.get("manager") == manager and e.get("subresource", "") == subresource
        ]

    def apply(
        self,
        live: Dict[str, Any],
        config: Dict[str, Any],
        manager: str,
        force: bool,
        subresource: str,
        policy: ListPolicy,
        api_version: str,
        now: str,
    ) -> Dict[str, Any]:
        status_only = subresource == "status"
        applied = _scoped(fieldset(config, policy, True), status_only)
        conflicts: List[Tuple[str, str, Path]] = []
        for i, entry, paths in self.others(manager, subresource):
            for path in sorted(applied & paths):
                if get(live, path) != get(config, path):
                    conflicts.append((i, entry, path))
        if conflicts and not force:
            raise _conflict_error(conflicts)
        for i, _entry, path in conflicts:
            self.sets[i].discard(path)
        merged = merge_apply(live, config, policy)
        idx = self._find(manager, "Apply", subresource)
        previous = self.sets[idx] if idx >= 0 else set()
        owned_by_others: Set[Path] = set()
        for _i, _e, paths in self.others(manager, subresource):
            owned_by_others |= paths
        for _i, entry, paths in self._mine(manager, subresource):
            if entry.get("operation") != "Apply":
                owned_by_others |= paths
        for path in sorted(previous - applied - owned_by_others, key=len, reverse=True):
            if not any(p[: len(path)] == path for p in applied):
                remove(merged, path)
        self._set(manager, "Apply", subresource, applied, api_version, now)
        return merged


def _scoped(paths: Set[Path], status_only: bool) -> Set[Path]:
    if status_only:
        return {p for p in paths if p[0] == "f:status"}
    return {p for p in paths if p[0] != "f:status"}


def _conflict_error(conflicts: List[Tuple[int, Dict[str, Any], Path]]) -> ApiError:
    causes = []
    by_manager: Dict[str, List[str]] = {}
    for _i, entry, path in conflicts:
        label = 'conflict with "{}"'.format(entry.get("manager"))
        if entry.get("operation") == "Update":
            label += " using {}".format(entry.get("apiVersion", ""))
        causes.append({"reason": "FieldManagerConflict", "message": label, "field": display(path)})
        by_manager.setdefault(label, []).append(display(path))
    n = len(conflicts)
    if n == 1:
        label, fields = next(iter(by_manager.items()))
        message = f"Apply failed with 1 conflict: {label}: {fields[0]}"
    else:
        parts = []
        for label, fields in by_manager.items():
            parts.append(
                "{}:\n{}".format(
                    label.replace("conflict with", "conflicts with", 1), "\n".join("- " + f for f in fields)
                )
            )
        message = "Apply failed with {} conflicts: {}".format(n, "\n".join(parts))
    return ApiError(409, message, reason="Conflict", details={"causes": causes})
