# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error every parser of outside text raises, and the safe primitives parsers share.

Tool output (mlnx_qos, dcb, rdma, setpci, ethtool, nvidia-smi, gdscheck, ofed_info, dkms),
files the host owns (sysfs and procfs attributes, cufile.json, nccl.conf, repository indexes)
and PCI config space are read by small parsers in ``plugins/module_utils``. Each documents what
it returns for text it cannot read: either ``ParseError`` (or a subclass) or its documented
"absent" value (``None``, ``()``, an empty dict). Never a bare ``ValueError``, ``IndexError``,
``OverflowError`` or ``RecursionError``: a module catches ``ParseError`` and fails with one
message naming the tool or file, the device and the offending line.

Why the primitives: ``int()`` raises on integers of more than 4,300 digits (CPython's
int_max_str_digits), accepts non-ASCII digits that ``str.isdigit()`` also lets through in
forms ``int()`` refuses (``'²'``), and ``float()`` turns 400 digits into ``inf``, which
``round()`` refuses. Nothing read from a NIC, a kernel or a package index needs more than 20
digits, so ``integer()`` and ``number()`` take ASCII digits only and at most 20 of them.

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Optional, Tuple, Union

MAX_DIGITS = 20  # 2**64 has 20 decimal digits; the patterns below take at most this many
_INT = re.compile(r"[+-]?[0-9]{1,20}", re.ASCII)
_HEX = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,20}", re.ASCII)
_NUMBER = re.compile(r"[+-]?[0-9]{1,20}(?:\.[0-9]{1,20})?", re.ASCII)
_SHOWN = 120  # characters of an offending line quoted in a message


def shorten(line: str, limit: int = _SHOWN) -> str:
    """The offending line as a message quotes it: without its line end, at most ``limit`` characters."""
    line = line.rstrip("\r\n")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _quoted(token: Any) -> str:
    """A token as a message quotes it: repr, at most 40 characters of it."""
    return repr(shorten(token, 40)) if isinstance(token, str) else repr(token)


class ParseError(ValueError):
    """Text from outside does not have the documented format.

    ``source`` names where the text came from (a tool call with its device, or a file), ``lineno``
    (1-based) and ``line`` the offending line when there is one. ``str()`` gives one sentence with
    all of them; ``message`` is the bare reason.
    """

    def __init__(
        self, message: str, *, line: Optional[str] = None, lineno: Optional[int] = None, source: Optional[str] = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.lineno = lineno
        self.source = source

    def __str__(self) -> str:
        text = self.message
        if self.line is not None:
            where = f"line {self.lineno}: " if self.lineno is not None else ""
            text = f"{text} ({where}{shorten(self.line)!r})"
        elif self.lineno is not None:
            text = f"{text} (line {self.lineno})"
        return f"{self.source}: {text}" if self.source else text

    def within(self, source: str) -> ParseError:
        """Name where the text came from (a tool call and its device, or a file), unless already named."""
        if not self.source:
            self.source = source
        return self


def as_text(data: Any, what: str = "input") -> str:
    """Text from ``str`` or ``bytes`` (UTF-8; undecodable bytes become U+FFFD); ParseError otherwise."""
    if isinstance(data, str):
        return data
    if isinstance(data, (bytes, bytearray)):
        return bytes(data).decode("utf-8", "replace")
    raise ParseError(f"{what}: expected text, got {type(data).__name__}")


def text_or_none(data: Any) -> Optional[str]:
    """``as_text`` for parsers whose documented answer to unreadable input is None."""
    try:
        return as_text(data)
    except ParseError:
        return None


def numbered(text: str) -> Iterator[Tuple[int, str]]:
    """(1-based line number, line) for every line of ``text``."""
    return enumerate(text.splitlines(), 1)


def integer(
    token: Any,
    what: str,
    low: Optional[int] = None,
    high: Optional[int] = None,
    *,
    base: int = 10,
    line: Optional[str] = None,
    lineno: Optional[int] = None,
) -> int:
    """``token`` as an int in ``low..high`` (either bound optional); ParseError naming ``what`` otherwise.

    Base 10 takes an optional sign and at most 20 ASCII digits; base 16 at most 20 hex digits with an
    optional ``0x``; base 0 takes either form, hex only with its ``0x`` prefix.
    """
    text = token.strip() if isinstance(token, str) else None
    value = None
    if text is not None:
        hexa = base == 16 or (base == 0 and text[:2] in ("0x", "0X"))
        if hexa and _HEX.fullmatch(text):
            value = int(text, 16)
        elif not hexa and _INT.fullmatch(text):
            value = int(text, 10)
    if value is None:
        raise ParseError(f"{what}: {_quoted(token)} is not an integer", line=line, lineno=lineno)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{'' if low is None else low}..{'' if high is None else high}"
        raise ParseError(f"{what}: {value} is out of range {bounds}", line=line, lineno=lineno)
    return value


def integer_or_none(token: Any, low: Optional[int] = None, high: Optional[int] = None, base: int = 10) -> Optional[int]:
    """``integer()`` for attributes whose documented "absent" value is None."""
    try:
        return integer(token, "value", low, high, base=base)
    except ParseError:
        return None


def number(token: Any, what: str, *, line: Optional[str] = None, lineno: Optional[int] = None) -> float:
    """A decimal number (``12``, ``2.5``) of at most 20 digits either side of the point."""
    text = token.strip() if isinstance(token, str) else ""
    if not _NUMBER.fullmatch(text):
        raise ParseError(f"{what}: {_quoted(token)} is not a number", line=line, lineno=lineno)
    return float(text)


def number_or_none(token: Any) -> Optional[float]:
    try:
        return number(token, "value")
    except ParseError:
        return None


def version_numbers(text: Any) -> Tuple[int, ...]:
    """The dotted number a version string starts with: '5.15.0-91-generic' -> (5, 15, 0),
    '13.0' -> (13, 0), 'v24.9.0' -> (24, 9, 0); () when it starts with no number (or a part has
    more than 20 digits). The one version reader of the collection: every stage compares these."""
    text = text_or_none(text) if isinstance(text, (bytes, bytearray)) else str(text or "")
    match = re.match(r"\s*v?([0-9]+(?:\.[0-9]+)*)", text or "", re.ASCII)
    if not match:
        return ()
    parts = match.group(1).split(".")
    if any(len(p) > MAX_DIGITS for p in parts):
        return ()
    return tuple(int(p) for p in parts)


Text = Union[str, bytes]
