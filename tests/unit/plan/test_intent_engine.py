"""The checking engine (plugins/module_utils/intent/check.py) on small specs."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as _intent

SPEC = {
    "fab": {
        "type": "dict",
        "apply_defaults": True,
        "options": {
            "prio": {"type": "int", "default": 3},
            "on": {"type": "bool", "default": True},
            "mode": {"type": "str", "choices": ["shared", "exclusive"], "default": "shared"},
        },
    },
    "items": {
        "type": "list",
        "elements": "dict",
        "options": {"index": {"type": "int", "required": True}, "name": {"type": "str"}},
    },
    "sizes": {"type": "list", "elements": "int", "default": []},
    "name": {"type": "str", "default": "{{ host }}-x"},
    "other": {"type": "str", "default": "{{ name }}-y"},
}


def render(text, known):
    out = text
    for key, value in dict(known, host="h1").items():
        out = out.replace("{{ " + key + " }}", str(value))
    if "{{" in out:
        raise ValueError("undefined")
    return out


def test_defaults_are_filled_in_nested_and_templated_in_dependency_order():
    values, problems = _intent.check(SPEC, {}, template=render)
    assert problems == []
    assert values["fab"] == {"prio": 3, "on": True, "mode": "shared"}
    assert values["name"] == "h1-x"
    assert values["other"] == "h1-x-y", "a default may name another templated default"


def test_types_are_coerced_like_ansible_and_bool_is_not_int():
    values, problems = _intent.check(SPEC, {"fab": {"prio": "5", "on": "yes"}, "sizes": "1,2"}, template=render)
    assert problems == []
    assert values["fab"]["prio"] == 5 and values["fab"]["on"] is True and values["sizes"] == [1, 2]
    _values, problems = _intent.check(SPEC, {"fab": {"prio": True}}, template=render)
    assert problems == ["fab.prio: must be an integer, got true"]


def test_unknown_keys_choices_and_required_are_named_with_their_path():
    _values, problems = _intent.check(
        SPEC, {"fab": {"prioo": 1, "mode": "exclusiv"}, "items": [{"name": "a"}, {"index": "x"}]}, template=render
    )
    assert "fab: unknown key 'prioo' (did you mean 'prio'?); allowed: mode, on, prio" in problems
    assert "fab.mode: 'exclusiv' is not allowed (did you mean 'exclusive'?); allowed: shared, exclusive" in problems
    assert "items[0].index: is required (it is missing)" in problems
    assert any(p.startswith("items[1].index: must be an integer, got the string 'x'") for p in problems)


def test_huge_numbers_and_wrong_shapes_are_problems_not_exceptions():
    values, problems = _intent.check(SPEC, {"fab": {"prio": "9" * 5000}, "items": "abc"}, template=render)
    assert any(p.startswith("items[0]: must be a mapping (key: value), got ") for p in problems)
    # A 5,000-digit number is an integer; the range rules then refuse it, and messages stay printable.
    assert _intent.show(values["fab"]["prio"]) == "an integer of about 5000 digits"
    assert _intent.show([10**5000]) == "a list too large to show"


def test_unknown_variables_are_found_by_prefix_with_a_suggestion():
    problems = _intent.unknown_variables(
        ["roce_bakend", "roce_backend", "gpufabric_lab_x", "ansible_host", "other_var"],
        known={"roce_backend", "roce_persist", "gpufabric_fabric"},
        prefixes=["roce_", "gpufabric_"],
        ignore_prefixes=["gpufabric_lab_"],
    )
    assert problems == [
        "roce_bakend: unknown variable (did you mean 'roce_backend'?); "
        "the roce_* variables are: roce_backend, roce_persist"
    ]


def test_an_unrenderable_default_is_a_problem():
    _values, problems = _intent.check({"x": {"type": "str", "default": "{{ nowhere }}"}}, {}, template=render)
    assert problems and problems[0].startswith("x: its default")


def test_infinity_and_nan_are_not_integers():
    """Found by the fuzz test: Ansible's int checker raises OverflowError on 'Infinity'."""
    for text in ("Infinity", "-Infinity", "NaN", float("inf"), float("nan")):
        _values, problems = _intent.check({"n": {"type": "int"}}, {"n": text})
        assert len(problems) == 1 and problems[0].startswith("n: must be an integer"), text


def test_type_errors_name_the_expected_type_in_the_inventory_terms():
    """Not Python's words (``<class 'list'> cannot be converted to a dict``): what the variable must be, and
    what it is, in YAML's terms."""
    spec = {
        "m": {"type": "dict"},
        "o": {"type": "dict", "options": {"k": {"type": "int"}}},
        "l": {"type": "list", "elements": "int"},
        "i": {"type": "int"},
        "b": {"type": "bool"},
    }
    _values, problems = _intent.check(spec, {"m": [1, 2], "o": ["k"], "l": [1, "two"], "i": 2.5, "b": "maybe"})
    assert problems == [
        "m: must be a mapping (key: value), got a list [1, 2]",
        "o: must be a mapping (key: value), got a list ['k']",
        "l[1]: must be an integer, got the string 'two'",
        "i: must be an integer (a whole number), got the number 2.5",
        "b: must be true or false, got the string 'maybe'",
    ]
    assert not any("class" in p or "cannot be converted" in p for p in problems)
