"""Every parser of outside text, on random input and on mutated real outputs, returns or raises
only its documented error (fuzz_targets.py says which). Deterministic under the ``ci`` profile."""

from __future__ import annotations

import functools
from typing import Any, List

import pytest
from fuzz_strategies import mutated, random_bytes, random_text
from fuzz_targets import TARGETS, Target
from hypothesis import given
from hypothesis import strategies as st

TEXT = [t for t in TARGETS if t.kind == "text"]
BINARY = [t for t in TARGETS if t.kind == "bytes"]


@functools.lru_cache(maxsize=None)
def corpus(name: str) -> List[Any]:
    return next(t for t in TARGETS if t.name == name).corpus()


def returns_or_raises_documented(target: Target, value: Any) -> None:
    """Call the parser; its documented error passes (and must print), anything else fails the test."""
    try:
        target.func(value)
    except target.raises as exc:
        assert str(exc), f"{target.name}: {type(exc).__name__} with an empty message"


def ids(targets: List[Target]) -> List[str]:
    return [t.name for t in targets]


@pytest.mark.parametrize("target", TEXT + BINARY, ids=ids(TEXT + BINARY))
def test_corpus_is_read_without_error(target):
    """The real outputs themselves parse: the mutations start from valid input."""
    for value in corpus(target.name):
        target.func(value)


@pytest.mark.parametrize("target", TEXT, ids=ids(TEXT))
@given(data=st.data())
def test_random_text_or_bytes(target, data):
    returns_or_raises_documented(target, data.draw(st.one_of(random_text(), random_bytes())))


@pytest.mark.parametrize("target", TEXT + BINARY, ids=ids(TEXT + BINARY))
@given(data=st.data())
def test_mutated_real_output(target, data):
    returns_or_raises_documented(target, data.draw(mutated(corpus(target.name))))


@pytest.mark.parametrize("target", BINARY, ids=ids(BINARY))
@given(value=random_bytes())
def test_random_bytes(target, value):
    returns_or_raises_documented(target, value)


def test_every_parser_module_is_covered():
    """Each module_utils file that parses outside text has its parsers registered."""
    prefix = "ansible_collections.gpufabric.rollout.plugins.module_utils."
    modules = {
        (getattr(t.func, "__module__", None) or "")[len(prefix) :]
        for t in TARGETS
        if (getattr(t.func, "__module__", None) or "").startswith(prefix)
    }
    assert {
        "parsers.qos",
        "apply.pcie_acs",
        "parsers.topology",
        "discover.gpudirect",
        "parsers.gdscheck",
        "parsers.cufile",  # apply/cufile.py edits what it parses (target cufile_edit)
        "plan.nccl",
        "plan.doca_index",
        "plan.doca_stack",
        "shared.parse",  # version_numbers, the one version reader
        "parsers.perftest",
        "parsers.nccltests",
        "parsers.gdsio",
        "parsers.gpuprobe",
        "parsers.vlan",
    } <= modules
