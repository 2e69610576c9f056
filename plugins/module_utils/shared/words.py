# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values in messages, in the inventory's words: what a value is in YAML's terms ("a list",
"the string 'x'", "null"), never Python's class names, and a short rendering of it.

The one place every message about a variable's value takes its words from (intent checks, the AWX
survey's settings). Pure Python (>= 3.8), standard library only.
"""

from __future__ import annotations

from typing import Any, Mapping


def show(value: Any, limit: int = 60) -> str:
    """A short, readable rendering of a value for messages (strings quoted, long values cut)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, int) and value.bit_length() > 200:
        text = f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    else:
        try:
            text = repr(value)
        except ValueError:  # a structure holding an integer too long to print
            text = f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def got_words(value: Any) -> str:
    """What an inventory value is, in YAML's terms (not Python's class names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return f"a mapping {show(value)}"
    if isinstance(value, (list, tuple)):
        return f"a list {show(list(value))}"
    if isinstance(value, int):
        return f"the integer {show(value)}"
    if isinstance(value, float):
        return f"the number {show(value)}"
    return f"the string {show(str(value))}"
