# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse cufile.json: JSON with ``//`` and ``/* */`` comments, as NVIDIA ships /etc/cufile.json.

``Parser`` reads the text into a tree of ``Node`` values that keep the span of each value and key,
so that apply/cufile.py can replace or insert text without moving anything else; ``parse`` gives
the document as Python data (comments dropped).

Contract: raises CufileSyntaxError (a ParseError) naming the line and column for any text that is
not JSON-with-comments, including nesting deeper than MAX_DEPTH (Python would otherwise run out of
stack) and NaN/Infinity (not JSON).

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, as_text

MAX_DEPTH = 64  # NVIDIA's file nests 3 deep; Python's stack allows about 490 with two frames a level


class CufileSyntaxError(ParseError):
    """The text is not JSON-with-comments; carries the line and column."""


class Node:
    """A parsed value: its Python value, its span [start, end) in the text, and for objects
    the members as (key, key_start, value_node) in document order."""

    __slots__ = ("end", "kind", "members", "start", "value")

    def __init__(
        self, kind: str, start: int, end: int, value: Any = None, members: Optional[List[Tuple[str, int, Node]]] = None
    ) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.value = value
        self.members = members

    def member(self, key: str) -> Optional[Node]:
        # cuFile's parser keeps the last duplicate; so do we.
        found = None
        for name, _pos, node in self.members or []:
            if name == key:
                found = node
        return found


class Parser:
    def __init__(self, text: Any) -> None:
        self.text = as_text(text, "cufile.json")
        self.pos = 0
        self.depth = 0

    def error(self, message: str, pos: Optional[int] = None) -> CufileSyntaxError:
        pos = min(self.pos if pos is None else pos, len(self.text))
        lineno = self.text.count("\n", 0, pos) + 1
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        line = self.text[start : len(self.text) if end < 0 else end]
        return CufileSyntaxError(f"{message} at line {lineno} column {pos - start + 1}", line=line, lineno=lineno)

    def enter(self, start: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels", start)

    def skip(self) -> None:
        """Skip whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            ch = text[self.pos]
            if ch in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = n if nl < 0 else nl + 1
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.error("unterminated /* comment")
                self.pos = close + 2
            else:
                return

    def parse_document(self) -> Node:
        self.skip()
        node = self.parse_value()
        self.skip()
        if self.pos != len(self.text):
            raise self.error("unexpected text after the top-level value")
        return node

    def parse_value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.error("unexpected end of text")
        ch = self.text[self.pos]
        if ch == "{":
            return self.parse_object()
        if ch == "[":
            return self.parse_array()
        if ch == '"':
            start = self.pos
            value = self.parse_string()
            return Node("string", start, self.pos, value)
        return self.parse_literal()

    def parse_string(self) -> str:
        text, start = self.text, self.pos
        i = start + 1
        while i < len(text):
            ch = text[i]
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                self.pos = i + 1
                try:
                    return json.loads(text[start : i + 1])
                except ValueError as exc:
                    raise self.error(f"bad string ({exc})", start) from exc
            if ch == "\n":
                break
            i += 1
        raise self.error("unterminated string", start)

    def parse_literal(self) -> Node:
        text, start = self.text, self.pos
        i = start
        while i < len(text) and text[i] not in ",]} \t\r\n/":
            i += 1
        token = text[start:i]
        if token == "true":
            value: Any = True
        elif token == "false":
            value = False
        elif token == "null":
            value = None
        else:
            try:
                value = json.loads(token)
            except ValueError:
                raise self.error(f"unexpected token {token[:20]!r}", start) from None
            if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
                raise self.error(f"unexpected token {token[:20]!r}", start)
        self.pos = i
        return Node("scalar", start, i, value)

    def parse_array(self) -> Node:
        start = self.pos
        self.enter(start)
        self.pos += 1
        items: List[Any] = []
        self.skip()
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("unterminated array", start)
            if self.text[self.pos] == "]":
                self.pos += 1
                self.depth -= 1
                return Node("array", start, self.pos, items)
            items.append(self.parse_value().value)
            self.skip()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
            elif self.pos < len(self.text) and self.text[self.pos] != "]":
                raise self.error("expected ',' or ']'")

    def parse_object(self) -> Node:
        start = self.pos
        self.enter(start)
        self.pos += 1
        members: List[Tuple[str, int, Node]] = []
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("unterminated object", start)
            ch = self.text[self.pos]
            if ch == "}":
                self.pos += 1
                value = {}
                for key, _pos, node in members:
                    value[key] = node.value
                self.depth -= 1
                return Node("object", start, self.pos, value, members)
            if ch != '"':
                raise self.error("expected a quoted key or '}'")
            key_start = self.pos
            key = self.parse_string()
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] != ":":
                raise self.error("expected ':' after key")
            self.pos += 1
            node = self.parse_value()
            members.append((key, key_start, node))
            self.skip()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
            elif self.pos < len(self.text) and self.text[self.pos] != "}":
                raise self.error("expected ',' or '}'")


def parse(text: Any) -> Dict[str, Any]:
    """Return the document as Python data (comments dropped). Raises CufileSyntaxError."""
    node = Parser(text).parse_document()
    if node.kind != "object":
        raise CufileSyntaxError("the top-level value is not an object")
    return node.value
