"""The inventory-data strategies the intent validator's fuzz test will use produce what they promise."""

from __future__ import annotations

from fuzz_strategies import inventory_data, mutated_intent
from hypothesis import given, settings

GOOD = {"transport": "roce", "lossless_priority": 3, "rails": [{"name": "rail0", "vlan": 100}]}


def _leaves(value):
    if isinstance(value, dict):
        return {k: _leaves(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_leaves(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=40)
@given(mutated_intent(GOOD))
def test_mutated_intent_differs_from_the_good_one(intent):
    assert isinstance(intent, dict)
    assert _leaves(intent) != _leaves(GOOD)
    assert GOOD == {"transport": "roce", "lossless_priority": 3, "rails": [{"name": "rail0", "vlan": 100}]}


@settings(max_examples=40)
@given(inventory_data())
def test_inventory_data_is_yaml_shaped(value):
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert all(isinstance(k, str) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            assert item is None or isinstance(item, (bool, int, float, str))
