"""Patch engines: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional, Tuple

from .errors import ApiError

# (path of field names, list value) -> merge keys (a tuple), "set" for a list of scalars merged as
# a set, or None for an atomic list.
ListPolicy = Callable[[Tuple[str, ...], List[Any]], Any]


def item_key(item: Any, keys: Tuple[str, ...]) -> Optional[Tuple[Any, ...]]:
    """The merge-key values of a list item, or None when it lacks one."""
    if not isinstance(item, dict) or any(k not in item for k in keys):
        return None
    return tuple(item[k] for k in keys)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class JsonPatchTestFailed(ApiError):
    pass


def _pointer(path: str) -> List[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f'json patch path "{path}" must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: List[str], path: str) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                raise ApiError(
                    422,
                    "the server rejected our request due to an error in our request: "
                    f'doc is missing path: "{path}": missing value',
                )
            node = node[part]
        elif isinstance(node, list):
            try:
                node = node[int(part)]
            except (ValueError, IndexError):
                raise ApiError(
                    422,
                    "the server rejected our request due to an error in our request: "
                    f'doc is missing path: "{path}": missing value',
                ) from None
        else:
            raise ApiError(422, f'doc is missing path: "{path}"')
    return node


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 add/remove/replace/move/copy/test. A failed test is a 422, as on the real server."""
    if not isinstance(ops, list):
        raise ApiError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind = op.get("op")
        path = op.get("path", "")
        parts = _pointer(path)
        if kind == "test":
            current = _walk(doc, parts, path)
            if current != op.get("value"):
                raise JsonPatchTestFailed(
                    422,
                    "the server rejected our request due to an error in our request: "
                    f"testing value {path} failed: test failed",
                )
            continue
        if kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = copy.deepcopy(_walk(doc, src, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, src, op.get("from", ""))
            doc = _add(doc, parts, value, path)
        elif kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        elif kind == "remove":
            doc = _remove(doc, parts, path)
        elif kind == "replace":
            _walk(doc, parts, path)
            doc = _remove(doc, parts, path)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        else:
            raise ApiError(422, f"Unexpected kind: {kind}")
    return doc


def _add(doc: Any, parts: List[str], value: Any, path: str) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                idx = int(last)
            except ValueError:
                raise ApiError(422, f'invalid index "{last}" in {path}') from None
            if idx < 0 or idx > len(parent):
                raise ApiError(422, f'add operation does not apply: doc is missing path: "{path}"')
            parent.insert(idx, value)
    else:
        raise ApiError(422, f'doc is missing path: "{path}"')
    return doc


def _remove(doc: Any, parts: List[str], path: str) -> Any:
    if not parts:
        return None
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    _walk(doc, parts, path)
    if isinstance(parent, dict):
        del parent[last]
    else:
        del parent[int(last)]
    return doc


# ---------------------------------------------------------------- strategic merge patch


def strategic_merge(target: Any, patch: Any, policy: ListPolicy, path: Tuple[str, ...] = ()) -> Any:
    """Strategic merge: maps merge, lists with a merge key merge by key, `$patch` directives."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in (value or [])]
            continue
        if value is None:
            out.pop(key, None)
            continue
        if isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, policy, (*path, key))
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value, policy, (*path, key))
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = value
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(current: Any, patch: List[Any], policy: ListPolicy, path: Tuple[str, ...]) -> List[Any]:
    strategy = policy(path, patch if patch else (current or []))
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    if not isinstance(current, list) or strategy is None:
        return [_strip(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "delete")]
    if strategy == "set":
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    keys = tuple(strategy)
    out = copy.deepcopy(current)
    for item in patch:
        wanted = item_key(item, keys)
        if wanted is None:
            out.append(_strip(item))
            continue
        idx = next((i for i, cur in enumerate(out) if item_key(cur, keys) == wanted), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_strip(item))
        else:
            out[idx] = strategic_merge(out[idx], item, policy, path)
    return out


def _strip(value: Any) -> Any:
    """Drop directive keys from a value that is inserted whole."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return copy.deepcopy(value)
