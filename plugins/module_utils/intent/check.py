# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Strict checking of inventory variables against the roles' argument specs.

The argument specs (``roles/*/meta/argument_specs.yml``) are the one definition of every variable:
its type, choices, default, nested keys and description. This module walks a variable's value
along its spec and returns the value with defaults filled in, or the list of problems, each naming
the variable path, the value and what is allowed. Unknown keys (typos) are refused with the closest
known name. Types are coerced the way Ansible coerces module and role arguments (``"3"`` is an
int, ``yes`` a bool), but a bool is never an int and an int is never silently truncated.

Ranges and rules across fields are not expressible in argument specs; they live in
``_intent_rules.py`` and run on the normalised values this module returns.

Pure: no Ansible runtime, only ``ansible.module_utils`` type checkers.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.common.validation import (
    check_type_bool,
    check_type_dict,
    check_type_float,
    check_type_int,
    check_type_list,
    check_type_path,
    check_type_str,
)

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import got_words, show

Spec = Mapping[str, Mapping[str, Any]]

_TYPE_WORDS = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "float": "a number",
    "list": "a list (- item)",
    "dict": "a mapping (key: value)",
    "path": "a path",
    "raw": "any value",
}


def type_problem(path: str, kind: str, value: Any) -> str:
    """``path: must be <type in the inventory's terms>, got <what it is>``."""
    want = _TYPE_WORDS.get(kind, kind)
    if kind == "int" and isinstance(value, float):
        want = "an integer (a whole number)"
    return f"{path}: must be {want}, got {got_words(value)}"


class IntentError(ValueError):
    """The inventory's variables are not valid; ``problems`` lists every one, each self-contained."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def closest(name: str, known: Iterable[str]) -> Optional[str]:
    """The known name a typo most likely meant, or None when nothing is close."""
    matches = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_message(path: str, name: str, known: Iterable[str], what: str = "key") -> str:
    known = sorted(known)
    hint = closest(name, known)
    guess = f" (did you mean {hint!r}?)" if hint else ""
    return f"{path}: unknown {what} {name!r}{guess}; allowed: {', '.join(known) or 'none'}"


def _coerce(kind: str, value: Any) -> Any:
    """Coerce one value to an argument-spec type; raises TypeError/ValueError when it cannot."""
    if kind == "int":
        if isinstance(value, bool):
            raise TypeError("a boolean is not an integer")
        if isinstance(value, float) and not value.is_integer():
            raise TypeError("not a whole number")
        return check_type_int(value)
    if kind == "float":
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        return check_type_float(value)
    if kind == "bool":
        return check_type_bool(value)
    if kind == "str":
        if isinstance(value, (dict, list)):
            raise TypeError("a mapping or list is not a string")
        return check_type_str(value, allow_conversion=True)
    if kind == "path":
        if isinstance(value, (dict, list)):
            raise TypeError("a mapping or list is not a path")
        return check_type_path(value)
    if kind == "list":
        if isinstance(value, dict):
            raise TypeError("a mapping is not a list")
        return check_type_list(value)
    if kind == "dict":
        return check_type_dict(value)
    return value  # raw and anything unknown: as given


class _Walker:
    def __init__(self) -> None:
        self.problems: List[str] = []

    @staticmethod
    def default(option: Mapping[str, Any]) -> Any:
        return copy.deepcopy(option.get("default"))

    def options(self, spec: Spec, values: Any, path: str) -> Dict[str, Any]:
        """Check a mapping against nested options; fill defaults; refuse unknown keys."""
        if values is None:
            values = {}
        if not isinstance(values, Mapping):
            self.problems.append(f"{type_problem(path, 'dict', values)}; expected keys: {', '.join(sorted(spec))}")
            return {}
        out: Dict[str, Any] = {}
        for key in values:
            if key not in spec:
                self.problems.append(unknown_message(path, key, spec))
        for key, option in spec.items():
            child = f"{path}.{key}" if path else key
            present = key in values and values[key] is not None
            if not present:
                if option.get("required"):
                    got = "null" if key in values else "missing"
                    self.problems.append(f"{child}: is required (it is {got})")
                    out[key] = None
                    continue
                out[key] = self.value(option, self.default(option), child, from_default=True)
                continue
            out[key] = self.value(option, values[key], child)
        return out

    def value(self, option: Mapping[str, Any], value: Any, path: str, from_default: bool = False) -> Any:
        kind = option.get("type", "str")
        if value is None:
            if option.get("options") and kind == "dict":
                return self.options(option["options"], {}, path)
            return None
        try:
            value = _coerce(kind, value)
        except (TypeError, ValueError, OverflowError):
            self.problems.append(type_problem(path, kind, value))
            return None
        if kind == "list":
            return self._list(option, value, path)
        if kind == "dict" and option.get("options"):
            return self.options(option["options"], value, path)
        self._choices(option, value, path)
        return value

    def _list(self, option: Mapping[str, Any], value: List[Any], path: str) -> List[Any]:
        elements = option.get("elements")
        if not elements:
            return list(value)
        out = []
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            if item is None:
                self.problems.append(type_problem(where, elements, None))
                out.append(None)
                continue
            if elements == "dict" and option.get("options"):
                out.append(self.options(option["options"], item, where))
                continue
            try:
                item = _coerce(elements, item)
            except (TypeError, ValueError, OverflowError):
                self.problems.append(type_problem(where, elements, item))
                out.append(None)
                continue
            self._choices(option, item, where)
            out.append(item)
        return out

    def _choices(self, option: Mapping[str, Any], value: Any, path: str) -> None:
        choices = option.get("choices")
        if not choices or value in choices:
            return
        names = [str(c) for c in choices]
        hint = closest(str(value), names)
        guess = f" (did you mean {hint!r}?)" if hint else ""
        self.problems.append(f"{path}: {show(value)} is not allowed{guess}; allowed: {', '.join(names)}")


def check(
    spec: Spec,
    values: Mapping[str, Any],
    template: Optional[Callable[[Any, Mapping[str, Any]], Any]] = None,
) -> Tuple[Dict[str, Any], List[str]]:
    """Check top-level variables against a spec (an entry point's ``options``).

    Returns (values with defaults filled, problems). Variables absent from ``values`` take the
    spec's default. A default that is a Jinja expression (``"{{ inventory_hostname }}"``) is
    rendered with ``template(text, known_values)`` once the values it may refer to are known;
    one default may name another. Only the variables of ``spec`` are looked at; finding unknown
    variables is ``unknown_variables()``'s job.
    """
    walker = _Walker()
    out: Dict[str, Any] = {}
    deferred = []
    for name, option in spec.items():
        if name in values and values[name] is not None:
            out[name] = walker.value(option, values[name], name)
        elif option.get("required"):
            walker.problems.append(f"{name}: is required")
            out[name] = None
        elif template is not None and isinstance(option.get("default"), str) and "{{" in option["default"]:
            deferred.append(name)
        else:
            out[name] = walker.value(option, walker.default(option), name, from_default=True)
    for _round in range(4):
        waiting = []
        for name in deferred:
            try:
                rendered = template(spec[name]["default"], out)
            except Exception:  # an undefined name: try again once more values are known
                waiting.append(name)
                continue
            out[name] = walker.value(spec[name], rendered, name, from_default=True)
        if not waiting or len(waiting) == len(deferred):
            deferred = waiting
            break
        deferred = waiting
    for name in deferred:
        try:
            template(spec[name]["default"], out)
        except Exception as exc:
            walker.problems.append(f"{name}: its default {show(spec[name]['default'])} cannot be rendered ({exc})")
        out[name] = None
    return out, walker.problems


def unknown_variables(
    names: Iterable[str],
    known: Iterable[str],
    prefixes: Iterable[str],
    ignore_prefixes: Iterable[str] = (),
    silent: Iterable[str] = (),
) -> List[str]:
    """Problems for variables that carry one of the collection's prefixes but no spec declares.

    ``roce_bakend: dcb`` in group_vars would otherwise be ignored silently while the role runs on
    its default backend.
    """
    known = set(known)
    silent = set(silent)
    prefixes = tuple(prefixes)
    ignore = tuple(ignore_prefixes)
    problems = []
    for name in sorted(set(names)):
        if name in known or name in silent or not name.startswith(prefixes) or (ignore and name.startswith(ignore)):
            continue
        family = [p for p in prefixes if name.startswith(p)]
        stem = max(family, key=len) if family else ""
        names_in_family = sorted(k for k in known if k.startswith(stem)) or sorted(known)
        hint = closest(name, names_in_family)
        guess = f" (did you mean {hint!r}?)" if hint else ""
        problems.append(f"{name}: unknown variable{guess}; the {stem}* variables are: {', '.join(names_in_family)}")
    return problems


def options_of(argument_specs: Mapping[str, Any], entry_point: str = "main") -> Dict[str, Any]:
    """The ``options`` of one entry point of a role's argument_specs.yml document."""
    entry = ((argument_specs or {}).get("argument_specs") or {}).get(entry_point) or {}
    return dict(entry.get("options") or {})


def check_scope(
    specs: Mapping[str, Mapping[str, Mapping[str, Any]]],
    entry: str,
    roles: Sequence[str],
    variables: Mapping[str, Any],
    rules: Sequence[Callable[[Mapping[str, Any], List[str]], None]] = (),
    template: Optional[Callable[[Any, Mapping[str, Any]], Any]] = None,
    plan_role: str = "plan",
    runtime_names: Iterable[str] = (),
    ignore_prefixes: Iterable[str] = (),
    given_rules: Sequence[Callable[[Mapping[str, Any], Mapping[str, Any], List[str]], None]] = (),
) -> Tuple[Dict[str, Any], List[str]]:
    """Check one host's variables: the plan role's ``entry`` (collection-wide) and ``roles``' main specs.

    ``specs`` is {role: {entry point: options}} for every role of the collection; variables with
    a collection prefix that no spec declares are refused too. ``rules`` see the values with the
    defaults filled in; ``given_rules`` also see the variables as given (``rule(values, given,
    problems)``), for a rule about what the inventory wrote rather than what the defaults made of it.
    Returns (values, problems).
    """
    spec: Dict[str, Any] = {}
    for role in roles:
        if role not in specs:
            raise IntentError([f"plan: unknown role {role!r}; roles of the collection: {', '.join(sorted(specs))}"])
        spec.update(specs[role].get("main") or {})
    # The plan role's entry points define the collection-wide variables; they win over any role's.
    spec.update(specs.get(plan_role, {}).get("main") or {})
    spec.update(specs.get(plan_role, {}).get(entry) or {})
    runtime_names = set(runtime_names)
    # Facts the plan itself sets (the node's plan that host roles take as input) are not intent.
    spec = {name: option for name, option in spec.items() if name not in runtime_names}
    known = set()
    for entries in specs.values():
        for options in entries.values():
            known.update(options)
    prefixes = ["gpufabric_"] + [f"{role}_" for role in specs]
    problems = unknown_variables(variables, known - runtime_names, prefixes, ignore_prefixes, runtime_names)
    present = {name: variables[name] for name in spec if name in variables}
    values, found = check(spec, present, template=template)
    problems.extend(found)
    for rule in rules:
        rule(values, problems)
    for given_rule in given_rules:
        given_rule(values, present, problems)
    return values, problems
