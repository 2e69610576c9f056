"""Validation and pruning of custom resources against a CRD's structural openAPIV3Schema.

Covers what the collection's CRDs use: type, nullable, required, enum, pattern, minimum/maximum
(and exclusive), min/maxLength, min/maxItems, min/maxProperties, properties,
additionalProperties, items, anyOf/oneOf/allOf/not, x-kubernetes-int-or-string,
x-kubernetes-preserve-unknown-fields, x-kubernetes-embedded-resource. No defaulting, no CEL.
Messages follow the wording of the real server's (kube-openapi) validation errors.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .errors import FieldError

_ROOT_META = ("apiVersion", "kind", "metadata")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(expected: str, value: Any) -> bool:
    actual = _json_type(value)
    if expected == actual:
        return True
    if expected == "number" and actual == "integer":
        return True
    return expected == "integer" and actual == "number" and float(value).is_integer()


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate(schema: Optional[Dict[str, Any]], obj: Any, path: str = "", root: bool = True) -> List[FieldError]:
    """All schema violations of obj, as field errors."""
    if not schema:
        return []
    errors: List[FieldError] = []
    _validate(schema, obj, path, errors, root)
    return errors


def _validate(schema: Dict[str, Any], value: Any, path: str, errors: List[FieldError], root: bool = False) -> None:
    shown = path or "<root>"
    if value is None:
        if schema.get("nullable"):
            return
        if schema.get("type") or schema.get("x-kubernetes-int-or-string"):
            expected = schema.get("type") or "integer-or-string"
            errors.append(
                FieldError(
                    "FieldValueTypeInvalid", shown, f'{shown} in body must be of type {expected}: "null"', "null", True
                )
            )
        return
    if schema.get("x-kubernetes-int-or-string"):
        if _json_type(value) not in ("integer", "string"):
            errors.append(
                FieldError(
                    "FieldValueTypeInvalid",
                    shown,
                    f'{shown} in body must be of type integer-or-string: "{_json_type(value)}"',
                    _json_type(value),
                    True,
                )
            )
            return
    else:
        expected = schema.get("type")
        if expected and not _type_ok(expected, value):
            errors.append(
                FieldError(
                    "FieldValueTypeInvalid",
                    shown,
                    f'{shown} in body must be of type {expected}: "{_json_type(value)}"',
                    _json_type(value),
                    True,
                )
            )
            return

    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_quote(v) for v in schema["enum"])
        errors.append(FieldError("FieldValueNotSupported", shown, f"supported values: {supported}", value, True))
    if isinstance(value, str):
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    "{} in body should match '{}'".format(shown, schema["pattern"]),
                    value,
                    True,
                )
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(FieldError("FieldValueTooLong", shown, f"may not be more than {schema['maxLength']} bytes"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    f"{shown} in body should be at least {schema['minLength']} chars long",
                    value,
                    True,
                )
            )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(schema, value, shown, errors)
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(
                FieldError(
                    "FieldValueTooMany", shown, f"must have at most {schema['maxItems']} items", len(value), True
                )
            )
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    f"{shown} in body should have at least {schema['minItems']} items",
                    len(value),
                    True,
                )
            )
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _validate(items, item, f"{path}[{i}]", errors)
        if schema.get("x-kubernetes-list-type") == "set" and len({_key(v) for v in value}) != len(value):
            errors.append(FieldError("FieldValueDuplicate", shown, "", value, False))
    if isinstance(value, dict):
        _validate_object(schema, value, path, shown, errors, root)
    _validate_combinators(schema, value, path, shown, errors)


def _check_number(schema: Dict[str, Any], value: Any, shown: str, errors: List[FieldError]) -> None:
    if "minimum" in schema:
        if schema.get("exclusiveMinimum") and value <= schema["minimum"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    "{} in body should be greater than {}".format(shown, _num(schema["minimum"])),
                    value,
                    True,
                )
            )
        elif value < schema["minimum"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    "{} in body should be greater than or equal to {}".format(shown, _num(schema["minimum"])),
                    value,
                    True,
                )
            )
    if "maximum" in schema:
        if schema.get("exclusiveMaximum") and value >= schema["maximum"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    "{} in body should be less than {}".format(shown, _num(schema["maximum"])),
                    value,
                    True,
                )
            )
        elif value > schema["maximum"]:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    "{} in body should be less than or equal to {}".format(shown, _num(schema["maximum"])),
                    value,
                    True,
                )
            )
    if "multipleOf" in schema and schema["multipleOf"] and (value / schema["multipleOf"]) % 1:
        errors.append(
            FieldError(
                "FieldValueInvalid",
                shown,
                "{} in body should be a multiple of {}".format(shown, _num(schema["multipleOf"])),
                value,
                True,
            )
        )


def _validate_object(
    schema: Dict[str, Any], value: Dict[str, Any], path: str, shown: str, errors: List[FieldError], root: bool
) -> None:
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(FieldError("FieldValueRequired", _join(path, name)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(
            FieldError(
                "FieldValueTooMany", shown, f"must have at most {schema['maxProperties']} items", len(value), True
            )
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(
            FieldError(
                "FieldValueInvalid",
                shown,
                f"{shown} in body should have at least {schema['minProperties']} properties",
                len(value),
                True,
            )
        )
    additional = schema.get("additionalProperties")
    for name, child in value.items():
        if root and name in _ROOT_META:
            if name == "metadata" and not isinstance(child, dict):
                errors.append(
                    FieldError(
                        "FieldValueTypeInvalid",
                        "metadata",
                        f'metadata in body must be of type object: "{_json_type(child)}"',
                        _json_type(child),
                        True,
                    )
                )
            continue
        if name in props:
            _validate(props[name], child, _join(path, name), errors)
        elif isinstance(additional, dict):
            _validate(additional, child, _join(path, name), errors)


def _validate_combinators(schema: Dict[str, Any], value: Any, path: str, shown: str, errors: List[FieldError]) -> None:
    for sub in schema.get("allOf") or []:
        _validate(_value_only(sub), value, path, errors)
    if schema.get("anyOf") and not any(not validate(_value_only(s), value, path, False) for s in schema["anyOf"]):
        errors.append(
            FieldError(
                "FieldValueInvalid",
                shown,
                "{} in body must be of type {}".format(
                    shown, " or ".join(s.get("type", "value") for s in schema["anyOf"])
                ),
                value,
                True,
            )
        )
    if schema.get("oneOf"):
        matches = sum(1 for s in schema["oneOf"] if not validate(_value_only(s), value, path, False))
        if matches != 1:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    shown,
                    f"{shown} in body must validate one and only one schema (oneOf)",
                    value,
                    True,
                )
            )
    if isinstance(schema.get("not"), dict) and not validate(_value_only(schema["not"]), value, path, False):
        errors.append(
            FieldError("FieldValueInvalid", shown, f"{shown} in body must not validate the schema (not)", value, True)
        )


def _value_only(schema: Dict[str, Any]) -> Dict[str, Any]:
    return schema


def prune(schema: Optional[Dict[str, Any]], obj: Any, path: str = "", root: bool = True) -> List[str]:
    """Drop fields the schema does not know (as the server prunes); returns their paths."""
    if not schema:
        return []
    dropped: List[str] = []
    _prune(schema, obj, path, dropped, root)
    return dropped


def _prune(schema: Dict[str, Any], value: Any, path: str, dropped: List[str], root: bool = False) -> None:
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-embedded-resource")
        for name in list(value):
            if root and name in _ROOT_META:
                continue
            if schema.get("x-kubernetes-embedded-resource") and name in _ROOT_META:
                continue
            if props is not None and name in props:
                _prune(props[name], value[name], _join(path, name), dropped)
            elif isinstance(additional, dict):
                _prune(additional, value[name], _join(path, name), dropped)
            elif additional is True or preserve:
                continue
            else:
                dropped.append(_join(path, name))
                del value[name]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(schema["items"], item, f"{path}[{i}]", dropped)


def subschema(schema: Optional[Dict[str, Any]], steps: List[Any]) -> Optional[Dict[str, Any]]:
    """The schema at a path of field names (str) and list positions (int); None if unknown."""
    node = schema
    for step in steps:
        if node is None:
            return None
        if isinstance(step, int):
            node = node.get("items") if isinstance(node.get("items"), dict) else None
        else:
            props = node.get("properties") or {}
            if step in props:
                node = props[step]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            else:
                return None
    return node


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)
