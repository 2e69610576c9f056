"""Hypothesis strategies for the fuzz tests: random text and bytes, mutated real outputs, and
inventory-shaped data for validators (see fuzz_targets.py)."""

from __future__ import annotations

import copy
import random
from typing import Any, Dict, List

from fuzz_mutations import NUMBER_REPLACEMENTS, mutate
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


# ---- for validators of inventory data (kind="data" targets) -----------------------------------
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(NUMBER_REPLACEMENTS),
)


def inventory_data() -> st.SearchStrategy[Any]:
    """Any value an inventory variable can hold (YAML: scalars, lists, string-keyed dicts)."""
    return st.recursive(
        _SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)),
        max_leaves=20,
    )


@st.composite
def mutated_intent(draw: Any, good: Dict[str, Any]) -> Dict[str, Any]:
    """``good`` with a few values replaced by a value of another type or out of range, or removed."""
    intent = copy.deepcopy(good)
    paths = _leaf_paths(intent)
    for _step in range(draw(st.integers(1, 3))):
        paths = [p for p in paths if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = intent
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1], None)
            paths = _leaf_paths(intent)
        else:
            old = parent[path[-1]]
            parent[path[-1]] = draw(inventory_data().filter(lambda v, old=old: type(v) is not type(old) or v != old))
    return intent


def _leaf_paths(value: Any, prefix: tuple = ()) -> List[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, (*prefix, k))] or [prefix]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*prefix, i))]
    return [prefix]
