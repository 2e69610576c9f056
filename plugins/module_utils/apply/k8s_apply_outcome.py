# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server-side apply of the objects the collection owns, object by object, with bounded retries and
field-manager conflicts named (the core of the ``k8s_apply`` module).

Each object is read, then applied (``PATCH`` with ``application/apply-patch+yaml``) without forcing
conflicts, unless the object read shows that the apply would change nothing (k8s_applied: every
field has its value and this field manager owns exactly those fields): a no-op rerun writes
nothing. Every request goes through ``k8s_retry.call``: 429, 5xx, an optimistic-lock 409 and a
lost connection are retried with backoff for at most ``timeout`` seconds per request, then the
object is named in the failure. A field-manager conflict (another manager, such as a
``kubectl edit`` or another tool, holds a field this collection sets to another value: the API
server answers 409 with one FieldManagerConflict cause per field, naming the manager) is not
retried: a retry gets the same answer. ``gpufabric_field_conflicts`` decides what it does:
``fail`` (the default) leaves the object as it is and names object, field and manager in the
failure; ``take`` applies it again with force and says whose fields it took.

Pure Python (3.8), no Ansible imports; ``client`` is a kubernetes DynamicClient (or a stand-in
with ``resources.get``, ``get`` and ``server_side_apply``).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_applied as _k8s_applied
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry

MODES = ("fail", "take")
# The API server's words for one conflict (k8s.io/apimachinery, structured-merge-diff), in a Status
# cause's message or in the plain text of a message without its JSON body.
_CONFLICT_RE = re.compile(r"conflicts? with \\*\"(?P<manager>[^\"\\]+)\\*\"")
_PLAIN_RE = re.compile(r"conflict with \"(?P<manager>[^\"]+)\"[^:\n]*:\s*(?P<field>\S+)")
# What the API server changes by itself on every write: not a change of the object's content.
_VOLATILE = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink")


class ApplyError(ValueError):
    """An argument the apply cannot work with."""


def _status_body(text: str) -> Optional[Dict[str, Any]]:
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            body = json.loads(text[start : end + 1])
            return body if isinstance(body, dict) else None
        except ValueError:
            return None
    return None


def held_fields(error: Any) -> List[Dict[str, str]]:
    """[{field, manager}] of a field-manager conflict (an API exception, its body or message); [] when none."""
    text = getattr(error, "body", None) or (error.get("msg") if isinstance(error, Mapping) else None) or error
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = str(text or "")
    body = _status_body(text)
    if body and body.get("code") == 409:
        held = []
        for cause in (body.get("details") or {}).get("causes") or []:
            if isinstance(cause, Mapping) and cause.get("reason") == "FieldManagerConflict":
                match = _CONFLICT_RE.search(str(cause.get("message") or ""))
                held.append(
                    {"field": str(cause.get("field") or "?"), "manager": match.group("manager") if match else "?"}
                )
        return held
    return [{"field": m.group("field"), "manager": m.group("manager")} for m in _PLAIN_RE.finditer(text)]


def ref(obj: Any) -> str:
    """Kind/namespace/name of an object (namespace empty for a cluster-scoped one)."""
    if not isinstance(obj, Mapping):
        return "?"
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '?')}/{meta.get('namespace', '')}/{meta.get('name', '?')}"


def content(obj: Any) -> Optional[Dict[str, Any]]:
    """An object as the comparison of before and after sees it: without status and what the server stamps."""
    if obj is None:
        return None
    data = copy.deepcopy(obj.to_dict() if hasattr(obj, "to_dict") else dict(obj))
    data.pop("status", None)
    meta = data.get("metadata") or {}
    for key in _VOLATILE:
        meta.pop(key, None)
    return data


def _plain(obj: Any) -> Dict[str, Any]:
    return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)


def _held_text(held: Sequence[Mapping[str, str]], how: str) -> str:
    return ", ".join(f'{h["field"]} {how} field manager "{h["manager"]}"' for h in held)


def apply_one(
    client: Any,
    obj: Mapping[str, Any],
    manager: str,
    mode: str,
    dry_run: bool,
    timeout: float,
    call: Callable[..., Any] = _k8s_retry.call,
) -> Dict[str, Any]:
    """{ref, changed, before, after, taken, conflict, error} of applying one object."""
    what = ref(obj)
    out: Dict[str, Any] = {"ref": what, "changed": False, "before": None, "after": None, "taken": [], "conflict": []}
    out["error"] = None
    meta = obj.get("metadata") or {}
    try:
        resource = call(
            lambda: client.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]),
            f"{what} (discovery)",
            timeout,
        )
        namespace = meta.get("namespace") if getattr(resource, "namespaced", False) else None
        try:
            before = call(lambda: client.get(resource, name=meta["name"], namespace=namespace), what, timeout)
        except Exception as exc:  # a missing object is created by the apply
            if _k8s_retry.status_of(exc) != 404:
                raise
            before = None
        if before is not None and _k8s_applied.unchanged(obj, _plain(before), manager):
            out["before"] = out["after"] = content(before)
            return out
        params = {"field_manager": manager, "namespace": namespace, "name": meta["name"]}
        if dry_run:
            params["dry_run"] = "All"

        def apply(force: bool):
            return call(
                lambda: client.server_side_apply(resource, body=dict(obj), force_conflicts=force, **params),
                what,
                timeout,
            )

        try:
            after = apply(False)
        except Exception as exc:
            held = held_fields(exc) if _k8s_retry.status_of(exc) == 409 else []
            if not held:
                raise
            if mode != "take":
                out["conflict"] = held
                return out
            out["taken"] = held
            after = apply(True)
    except Exception as exc:  # one failure per object, named in the module's message
        text = " ".join(str(getattr(exc, "body", None) or exc).split())
        out["error"] = text[:400]
        return out
    out["before"], out["after"] = content(before), content(after)
    out["changed"] = out["before"] != out["after"]
    return out


def apply_all(
    client: Any,
    objects: Sequence[Mapping[str, Any]],
    manager: str,
    mode: str,
    dry_run: bool,
    timeout: float,
    call: Callable[..., Any] = _k8s_retry.call,
) -> List[Dict[str, Any]]:
    """apply_one of each object, in order; an object's failure does not stop the others."""
    if mode not in MODES:
        raise ApplyError(f"conflicts: {mode!r} is not one of {', '.join(MODES)} (gpufabric_field_conflicts)")
    for obj in objects:
        if not isinstance(obj, Mapping) or not obj.get("apiVersion") or not obj.get("kind"):
            raise ApplyError(f"objects: {ref(obj)} has no apiVersion or kind")
        if not (obj.get("metadata") or {}).get("name"):
            raise ApplyError(f"objects: a {obj.get('kind')} has no metadata.name")
    return [apply_one(client, obj, manager, mode, dry_run, timeout, call) for obj in objects]


def failure_message(results: Sequence[Mapping[str, Any]], component: str) -> str:
    """The failure naming each object that was not applied, or '' when all were."""
    lines = []
    for result in results:
        if result.get("conflict"):
            lines.append(f"{result['ref']}: {_held_text(result['conflict'], 'is held by')}")
        elif result.get("error"):
            lines.append(f"{result['ref']}: {result['error']}")
    if not lines:
        return ""
    text = f"The API server did not take {len(lines)} object(s) of {component}: " + "; ".join(lines)
    if any(r.get("conflict") for r in results):
        text += (
            ". Another field manager changed fields this collection sets, and they were left as they are. Undo "
            "that change, or set gpufabric_field_conflicts: take to apply the planned values over it"
        )
    return text


def taken_message(results: Sequence[Mapping[str, Any]]) -> List[str]:
    """One line per object whose fields were taken from another manager (gpufabric_field_conflicts: take)."""
    return [f"{r['ref']}: took {_held_text(r['taken'], 'from')}" for r in results if r.get("taken")]
