"""API errors rendered as metav1.Status bodies shaped like the real API server's."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
}


class ApiError(Exception):
    """An error the server answers with a metav1.Status body."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified(plural: str, group: str) -> str:
    """`deployments.apps`, or `configmaps` for the core group (as the server spells resources)."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        f'{qualified(plural, group)} "{name}" not found',
        details={"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural},
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(409, f'{qualified(plural, group)} "{name}" already exists', reason="AlreadyExists", details=details)


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        reason="Conflict",
        details=details,
    )


class FieldError:
    """One field.Error: the server joins them into a 422 message and lists them as causes."""

    TYPES = {
        "FieldValueRequired": "Required value",
        "FieldValueInvalid": "Invalid value",
        "FieldValueNotSupported": "Unsupported value",
        "FieldValueTypeInvalid": "Invalid value",
        "FieldValueTooLong": "Too long",
        "FieldValueTooMany": "Too many",
        "FieldValueForbidden": "Forbidden",
        "FieldValueDuplicate": "Duplicate value",
    }

    def __init__(self, reason: str, field: str, detail: str = "", value: Any = None, show_value: bool = False):
        self.reason = reason
        self.field = field
        self.detail = detail
        self.value = value
        self.show_value = show_value

    def text(self) -> str:
        label = self.TYPES.get(self.reason, "Invalid value")
        out = f"{self.field}: {label}"
        if self.show_value:
            out += f": {_go_repr(self.value)}"
        if self.detail:
            out += f": {self.detail}"
        return out

    def cause(self) -> Dict[str, str]:
        message = self.text()[len(self.field) + 2 :]
        return {"reason": self.reason, "message": message, "field": self.field}


def _go_repr(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return '"{}"'.format(type(value).__name__.replace("dict", "object").replace("list", "array"))
    return str(value)


def invalid(kind: str, group: str, name: str, errors: List[FieldError]) -> ApiError:
    """422 Invalid, e.g. `NicClusterPolicy.mellanox.com "x" is invalid: spec.a: Required value`."""
    qualified_kind = f"{kind}.{group}" if group else kind
    texts = [e.text() for e in errors]
    joined = texts[0] if len(texts) == 1 else "[{}]".format(", ".join(texts))
    details: Dict[str, Any] = {"name": name, "kind": kind, "causes": [e.cause() for e in errors]}
    if group:
        details["group"] = group
    return ApiError(422, f'{qualified_kind} "{name}" is invalid: {joined}', reason="Invalid", details=details)
