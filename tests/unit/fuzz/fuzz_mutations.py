"""Mutations of real tool output: what a flaky tool, a truncated file or a new release can print.

Each operation takes the text and a ``random.Random`` and returns new text; ``mutate`` applies a
few of them. Hypothesis drives the Random (``st.randoms``), so a failure shrinks to a small
sequence of operations and replays from the fixed seed profile in conftest.py.
"""

from __future__ import annotations

import random
import re
from typing import Callable, List, Union

# What a number in tool output becomes: CPython's int() refuses more than 4,300 digits, indexes
# of 8 and more overflow 8-entry tables, '²' passes str.isdigit() but not int().
NUMBER_REPLACEMENTS = [
    "9" * 5000,
    "-1",
    "-0",
    "abc",
    "",
    "8",
    "9",
    "64",
    "255",
    "65536",
    "18446744073709551616",
    "1.5",
    "1.2.3",
    "²",
    "٣",
    "0x1f",
    "NaN",
    "1e999",
]
JUNK = ["\x00", "\ufffd", "\udcff", "\t", "\r", ":", ",", "=", "%", "[", "]", "{", "}", '"', "//", "/*", "\x1b[4m"]
_NUMBER = re.compile(r"[0-9]+")


def _lines(text: str) -> List[str]:
    return text.splitlines(keepends=True) or [""]


def delete_line(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    del lines[rnd.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    i = rnd.randrange(len(lines))
    lines.insert(i, lines[i])
    return "".join(lines)


def swap_lines(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def truncate(text: str, rnd: random.Random) -> str:
    return text[: rnd.randrange(len(text) + 1)]


def replace_number(text: str, rnd: random.Random) -> str:
    found = list(_NUMBER.finditer(text))
    if not found:
        return insert_junk(text, rnd)
    m = rnd.choice(found)
    return text[: m.start()] + rnd.choice(NUMBER_REPLACEMENTS) + text[m.end() :]


def insert_junk(text: str, rnd: random.Random) -> str:
    i = rnd.randrange(len(text) + 1)
    return text[:i] + rnd.choice(JUNK) + text[i:]


def nest_deeply(text: str, rnd: random.Random) -> str:
    i = rnd.randrange(len(text) + 1)
    depth = rnd.choice([100, 1000, 5000])
    opener, closer = rnd.choice([("[", "]"), ('{"a":', "}")])
    return text[:i] + opener * depth + "1" + closer * depth + text[i:]


def blank_line(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    i = rnd.randrange(len(lines))
    lines[i] = "\n" if lines[i].endswith("\n") else ""
    return "".join(lines)


OPERATIONS: List[Callable[[str, random.Random], str]] = [
    delete_line,
    duplicate_line,
    swap_lines,
    truncate,
    replace_number,
    replace_number,
    insert_junk,
    nest_deeply,
    blank_line,
]


def mutate(text: str, rnd: random.Random, as_bytes: bool = False) -> Union[str, bytes]:
    """1 to 4 operations on ``text``; as bytes (with bytes that are not UTF-8) when asked."""
    for _step in range(rnd.randint(1, 4)):
        text = rnd.choice(OPERATIONS)(text, rnd)
    if not as_bytes:
        return text
    data = text.encode("utf-8", "surrogateescape")
    i = rnd.randrange(len(data) + 1)
    return data[:i] + rnd.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[i:]
