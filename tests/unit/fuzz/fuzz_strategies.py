"""Hypothesis strategies for the fuzz tests: random text and bytes, and mutated real outputs
(see fuzz_targets.py). The plan's intent checker is fuzzed with its own strategies of
inventory-shaped data in tests/unit/plan/test_fuzz_intent.py."""

from __future__ import annotations

import random
from typing import Any, List

from fuzz_mutations import mutate
from hypothesis import strategies as st

# Characters tool output is made of, plus what breaks naive parsers: separators, digits of other
# scripts, surrogates (what undecodable bytes become after run_command), NUL, escapes.
_ALPHABET = st.sampled_from(
    [*"0123456789abcdefxyzABCDEF \t\n:,.=-+%/()[]{}\"'#*_~^", "\x00", "\x1b", "\ufffd", "\udcff", "²", "٣"]
)


def random_text() -> st.SearchStrategy[str]:
    """Short text from tool-output characters, and any text at all."""
    return st.one_of(st.text(_ALPHABET, max_size=200), st.text(max_size=100))


def random_bytes() -> st.SearchStrategy[bytes]:
    return st.binary(max_size=4200)


def mutated(corpus: List[Any]) -> st.SearchStrategy[Any]:
    """A real output of ``corpus`` after 1 to 4 mutations, as text or as bytes."""
    if corpus and isinstance(corpus[0], bytes):
        return st.builds(_mutate_bytes, st.sampled_from(corpus), st.randoms(use_true_random=False))
    return st.builds(mutate, st.sampled_from(corpus), st.randoms(use_true_random=False), st.booleans())


def _mutate_bytes(data: bytes, rnd: random.Random) -> bytes:
    """Flip, drop or cut bytes of a binary record (PCI config space)."""
    buf = bytearray(data)
    for _step in range(rnd.randint(1, 8)):
        op = rnd.randrange(3)
        if op == 0 and buf:
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        elif op == 1 and buf:
            del buf[rnd.randrange(len(buf))]
        else:
            buf = buf[: rnd.randrange(len(buf) + 1)]
    return bytes(buf)
