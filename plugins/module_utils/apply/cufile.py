# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit cufile.json (JSON with ``//`` and ``/* */`` comments) in place.

NVIDIA ships /etc/cufile.json as JSON with comments, tabs, trailing blanks and commented-out
keys. A JSON round trip would drop all of that, so this editor works on the text: it parses
the document into value spans, replaces only the spans of the keys whose values change, and
inserts missing keys next to their siblings with the siblings' indentation and separator.
Nothing else in the text moves; when no value changes the result is the input, byte for byte.

The parser is parsers/cufile.py. Contract: ``parse`` and ``apply_settings`` raise
CufileSyntaxError (a ParseError) naming the line and column for any text that is not
JSON-with-comments (see there).

Pure Python (>= 3.8), no Ansible imports: used by the cufile_config module and unit-tested.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.cufile import (
    CufileSyntaxError,
    Node,
    Parser,
    parse,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import as_text


def render_value(value: Any) -> str:
    """JSON text of a value on one line, the way NVIDIA's file writes lists: ``["a", "b"]``."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{json.dumps(k)}: {render_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    return json.dumps(value)


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _indent_of(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    i = start
    while i < len(text) and text[i] in " \t":
        i += 1
    return text[start:i]


def _only_trivia(segment: str) -> bool:
    """True when a piece of one line holds only blanks and/or a // comment."""
    stripped = segment.strip()
    return not stripped or stripped.startswith("//")


def _render_block(value: Dict[str, Any], indent: str, step: str, sep: str) -> str:
    """A multi-line object literal for a section that does not exist yet."""
    if not value:
        return "{ }"
    inner = indent + step
    lines = []
    for key, item in value.items():
        text = _render_block(item, inner, step, sep) if isinstance(item, dict) and item else render_value(item)
        lines.append(f"{inner}{json.dumps(key)}{sep}{text}")
    return "{\n" + ",\n".join(lines) + "\n" + indent + "}"


class _Edit:
    __slots__ = ("end", "start", "text")

    def __init__(self, start: int, end: int, text: str) -> None:
        self.start = start
        self.end = end
        self.text = text


def _plan_insert(text: str, obj: Node, key: str, value: Any) -> _Edit:
    """Where and what to insert to add ``key: value`` as the last member of ``obj``."""
    if obj.members:
        last_key, last_key_pos, last = obj.members[-1]
        indent = _indent_of(text, last_key_pos)
        key_end = last_key_pos + len(json.dumps(last_key))
        sep = text[key_end : last.start]
        if "\n" in sep or not sep.strip().startswith(":"):
            sep = ": "
        first_indent = _indent_of(text, obj.members[0][1])
        outer = _indent_of(text, obj.start)
        step = first_indent[len(outer) :] if first_indent.startswith(outer) and first_indent != outer else "    "
        rendered = _render_block(value, indent, step, sep) if isinstance(value, dict) and value else render_value(value)
        # Is there already a comma after the last value (possibly after blanks)?
        after = last.end
        j = after
        while j < len(text) and text[j] in " \t":
            j += 1
        has_comma = j < len(text) and text[j] == ","
        comma_end = j + 1 if has_comma else after
        eol = text.find("\n", comma_end)
        same_line_rest = text[comma_end:] if eol < 0 else text[comma_end:eol]
        if eol >= 0 and _only_trivia(same_line_rest) and "\n" in text[obj.start : obj.end]:
            # One member per line: end the last member's line, add ours on the next line.
            if has_comma:
                return _Edit(eol + 1, eol + 1, f"{indent}{json.dumps(key)}{sep}{rendered},\n")
            # Put the comma straight after the value, keep any trailing comment where it was.
            return _Edit(after, eol + 1, "," + text[after : eol + 1] + f"{indent}{json.dumps(key)}{sep}{rendered}\n")
        # Compact object on one line.
        if has_comma:
            return _Edit(comma_end, comma_end, f" {json.dumps(key)}{sep}{rendered},")
        return _Edit(after, after, f", {json.dumps(key)}{sep}{rendered}")
    # Empty object (perhaps holding only comments, like the shipped "nfs" section): add the
    # member on its own line just before the closing brace, keeping whatever is inside.
    outer = _indent_of(text, obj.start)
    inner_text = text[obj.start + 1 : obj.end - 1]
    inner = outer + "    "
    for line in inner_text.split("\n")[1:]:
        if line.strip():
            inner = line[: len(line) - len(line.lstrip(" \t"))]
            break
    step = inner[len(outer) :] if inner.startswith(outer) and inner != outer else "    "
    rendered = _render_block(value, inner, step, ": ") if isinstance(value, dict) and value else render_value(value)
    close = obj.end - 1
    line_start = _line_start(text, close)
    if "\n" in inner_text and not text[line_start:close].strip():
        return _Edit(line_start, line_start, f"{inner}{json.dumps(key)}: {rendered}\n")
    return _Edit(
        obj.start + 1,
        close,
        f"\n{inner}{json.dumps(key)}: {rendered}\n{outer}"
        if not inner_text.strip()
        else f"{inner_text.rstrip()}\n{inner}{json.dumps(key)}: {rendered}\n{outer}",
    )


def _flatten(prefix: Tuple[str, ...], desired: Dict[str, Any], out: List[Tuple[Tuple[str, ...], Any]]) -> None:
    for key, value in desired.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"setting names must be non-empty strings, got {key!r} under {'.'.join(prefix) or 'top'}")
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            _flatten(path, value, out)
        else:
            out.append((path, value))


def _same(current: Any, wanted: Any) -> bool:
    # JSON true is not 1: compare types for booleans, values otherwise.
    if isinstance(current, bool) or isinstance(wanted, bool):
        return isinstance(current, bool) and isinstance(wanted, bool) and current == wanted
    if isinstance(current, (int, float)) and isinstance(wanted, (int, float)):
        return current == wanted
    if isinstance(current, list) and isinstance(wanted, (list, tuple)):
        return len(current) == len(wanted) and all(_same(a, b) for a, b in zip(current, wanted))
    if isinstance(current, dict) and isinstance(wanted, dict):
        return current.keys() == wanted.keys() and all(_same(current[k], wanted[k]) for k in current)
    return type(current) is type(wanted) and current == wanted


def leaves(desired: Dict[str, Any]) -> List[Tuple[Tuple[str, ...], Any]]:
    """The (path, value) leaves of a nested dict of wanted values, as apply_settings sets them."""
    out: List[Tuple[Tuple[str, ...], Any]] = []
    _flatten((), desired, out)
    return out


def same(current: Any, wanted: Any) -> bool:
    """Whether a value read from a cufile.json is the wanted one (JSON true is not 1)."""
    return _same(current, wanted)


def apply_settings(text: str, desired: Dict[str, Any]) -> Tuple[str, List[str]]:
    """Set the leaves of ``desired`` (a nested dict) in the document ``text``.

    Dicts in ``desired`` merge into the document's objects; any other value (scalar, list,
    empty dict) replaces the value at that path. Returns ``(new_text, changed_paths)``; when
    ``changed_paths`` is empty ``new_text is text``. Raises CufileSyntaxError for unparsable
    input and ValueError when a path runs through a value that is not an object.
    """
    text = as_text(text, "cufile.json")
    leaves: List[Tuple[Tuple[str, ...], Any]] = []
    _flatten((), desired, leaves)
    changed: List[str] = []
    current = text
    # Apply one leaf at a time and re-parse: simple, and the files are small (~12 KB).
    for path, value in leaves:
        root = Parser(current).parse_document()
        if root.kind != "object":
            raise CufileSyntaxError("the top-level value is not an object")
        node = root
        edit: Optional[_Edit] = None
        for depth, key in enumerate(path):
            child = node.member(key)
            if child is None:
                remainder: Any = value
                for name in reversed(path[depth + 1 :]):
                    remainder = {name: remainder}
                edit = _plan_insert(current, node, key, remainder)
                break
            if depth == len(path) - 1:
                if not _same(child.value, value):
                    edit = _Edit(child.start, child.end, render_value(value))
                break
            if child.kind != "object":
                raise ValueError(f"cannot set {'.'.join(path)}: {'.'.join(path[: depth + 1])} is not an object")
            node = child
        if edit is not None:
            current = current[: edit.start] + edit.text + current[edit.end :]
            changed.append(".".join(path))
    if not changed:
        return text, []
    # The result must still parse, and must hold exactly what was asked.
    result = parse(current)
    for path, value in leaves:
        cursor: Any = result
        for key in path:
            cursor = cursor[key]
        if not _same(cursor, value):
            raise AssertionError(f"internal error: {'.'.join(path)} did not take the value {value!r}")
    return current, changed


def get_path(data: Dict[str, Any], dotted: str, default: Any = None) -> Any:
    """Look up ``a.b.c`` in parsed data."""
    cursor: Any = data
    for key in dotted.split("."):
        if not isinstance(cursor, dict) or key not in cursor:
            return default
        cursor = cursor[key]
    return cursor


def compat_mode_key(data: Dict[str, Any]) -> str:
    """The compat-mode property this file's release uses: ``allow_compat_mode`` (current
    releases) or ``use_compat_mode`` (older files and gdscheck's name for it)."""
    props = data.get("properties") if isinstance(data.get("properties"), dict) else {}
    if "allow_compat_mode" not in props and "use_compat_mode" in props:
        return "use_compat_mode"
    return "allow_compat_mode"


FILESYSTEMS = ("lustre", "nfs", "gpfs", "weka", "beegfs")


def build_desired(
    data: Dict[str, Any],
    *,
    compat_mode: Optional[bool] = None,
    force_compat_mode: Optional[bool] = None,
    rdma_dev_addr_list: Optional[List[str]] = None,
    use_pci_p2pdma: Optional[bool] = None,
    filesystems: Optional[Dict[str, Optional[Dict[str, Any]]]] = None,
    properties: Optional[Dict[str, Any]] = None,
    settings: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Turn the module's options into one nested dict of wanted values for apply_settings."""
    desired: Dict[str, Any] = {}
    props: Dict[str, Any] = dict(properties or {})
    if compat_mode is not None:
        props[compat_mode_key(data)] = compat_mode
    if force_compat_mode is not None:
        props["force_compat_mode"] = force_compat_mode
    if rdma_dev_addr_list is not None:
        props["rdma_dev_addr_list"] = list(rdma_dev_addr_list)
    if use_pci_p2pdma is not None:
        props["use_pci_p2pdma"] = use_pci_p2pdma
    if props:
        desired["properties"] = props
    fs = {name: values for name, values in (filesystems or {}).items() if values}
    unknown = sorted(set(fs) - set(FILESYSTEMS))
    if unknown:
        raise ValueError(f"unknown filesystem section(s) {', '.join(unknown)}; allowed: {', '.join(FILESYSTEMS)}")
    if fs:
        desired["fs"] = fs
    for key, value in (settings or {}).items():
        if isinstance(value, dict) and isinstance(desired.get(key), dict):
            merged = dict(desired[key])
            merged.update(value)
            desired[key] = merged
        else:
            desired[key] = value
    return desired
