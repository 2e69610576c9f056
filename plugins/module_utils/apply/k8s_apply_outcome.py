# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a server-side apply through kubernetes.core.k8s left behind, object by object.

The roles apply the objects they own without forcing conflicts (``force_conflicts: false``) and
with ``continue_on_error``, so one refused object does not hide the others. Afterwards each
object's answer is one of: applied; a field-manager conflict (another manager, such as a
``kubectl edit`` or another tool, holds a field this collection sets to another value: the API
server answers 409 with a FieldManagerConflict cause per field, naming the manager); a transient
answer still failing after the retries (429, 5xx, a lost connection); or another refusal.

``gpufabric_field_conflicts`` decides what a conflict does: ``fail`` (the default) stops the role
naming each object, field and manager, and changes nothing of those objects; ``take`` applies them
again with force_conflicts and says whose fields it took.

The input is what a looped kubernetes.core.k8s task registered (``results``: one entry per loop
item, the item an object or a list of objects). Pure Python (3.8), no Ansible imports.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry

MODES = ("fail", "take")
# The API server's words for one conflict (k8s.io/apimachinery, structured-merge-diff): in a Status
# cause's message, or in the plain text of a message without its JSON body.
_CONFLICT_RE = re.compile(r"conflicts? with \\*\"(?P<manager>[^\"\\]+)\\*\"(?P<how>[^:\n\"\\]*)")
_PLAIN_RE = re.compile(r"conflict with \"(?P<manager>[^\"]+)\"[^:\n]*:\s*(?P<field>\S+)")


class OutcomeError(ValueError):
    """A registered result that is not a kubernetes.core.k8s apply."""


def _status_body(text: str) -> Optional[Dict[str, Any]]:
    """The Status object in kubernetes.core's "Failed to apply object: b'{...}'" message, if any."""
    start = text.find("b'{")
    if start >= 0:
        end = text.rfind("'")
        try:
            raw = ast.literal_eval(text[start : end + 1])
            return json.loads(raw.decode("utf-8", "replace"))
        except (ValueError, SyntaxError):
            pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            body = json.loads(text[start : end + 1])
            return body if isinstance(body, dict) else None
        except ValueError:
            return None
    return None


def held_fields(error: Any) -> List[Dict[str, str]]:
    """[{field, manager}] of a field-manager conflict (an error dict or its message); [] when it is none."""
    text = error.get("msg", "") if isinstance(error, Mapping) else str(error or "")
    text = str(text)
    body = _status_body(text)
    held: List[Dict[str, str]] = []
    if body and body.get("code") == 409:
        for cause in (body.get("details") or {}).get("causes") or []:
            if not isinstance(cause, Mapping) or cause.get("reason") != "FieldManagerConflict":
                continue
            match = _CONFLICT_RE.search(str(cause.get("message") or ""))
            held.append({"field": str(cause.get("field") or "?"), "manager": match.group("manager") if match else "?"})
        return held
    return [{"field": m.group("field"), "manager": m.group("manager")} for m in _PLAIN_RE.finditer(text)]


def ref(obj: Any) -> str:
    """Kind/namespace/name of an object (namespace empty for a cluster-scoped one)."""
    if not isinstance(obj, Mapping):
        return "?"
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '?')}/{meta.get('namespace', '')}/{meta.get('name', '?')}"


def _entries(result: Mapping[str, Any]) -> List[Tuple[Any, Mapping[str, Any]]]:
    """(object, its answer) for each object of one loop item's result."""
    item = result.get("item")
    inner = result.get("result")
    if isinstance(item, list) and isinstance(inner, Mapping) and isinstance(inner.get("results"), list):
        return list(zip(item, inner["results"]))
    if isinstance(item, list):
        return [(item[0] if len(item) == 1 else None, result)]
    return [(item, result)]


def _answers(registered: Any) -> List[Tuple[Any, Mapping[str, Any]]]:
    if not isinstance(registered, Mapping):
        raise OutcomeError("expected what a kubernetes.core.k8s task registered")
    if registered.get("skipped"):
        return []
    results = registered.get("results")
    if results is None:
        return [(None, registered)]
    out: List[Tuple[Any, Mapping[str, Any]]] = []
    for result in results:
        if isinstance(result, Mapping) and not result.get("skipped"):
            out.extend(_entries(result))
    return out


def _error(answer: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    if isinstance(answer.get("error"), Mapping):
        return answer["error"]
    if answer.get("failed"):
        return answer
    return None


def transient(answer: Mapping[str, Any]) -> bool:
    """Whether one loop item's result holds an answer worth another try (and no conflict, which a retry keeps)."""
    if not isinstance(answer, Mapping):
        return False
    for _obj, entry in _entries(answer):
        error = _error(entry)
        if error is None or held_fields(error):
            continue
        if _k8s_retry.transient(dict(error, failed=True)):
            return True
    return False


def conflicts(registered: Any) -> List[Dict[str, Any]]:
    """[{ref, definition, held: [{field, manager}], text}] for each object refused for a field-manager conflict."""
    out = []
    for obj, answer in _answers(registered):
        error = _error(answer)
        held = held_fields(error) if error is not None else []
        if held:
            text = ", ".join(f'{h["field"]} (held by field manager "{h["manager"]}")' for h in held)
            out.append({"ref": ref(obj), "definition": obj, "held": held, "text": text})
    return out


def failures(registered: Any, mode: str) -> List[str]:
    """One line per object the apply left unapplied: its conflicts (unless `mode` takes them) and other refusals."""
    if mode not in MODES:
        raise OutcomeError(f"gpufabric_field_conflicts: {mode!r} is not one of {', '.join(MODES)}")
    lines = []
    for obj, answer in _answers(registered):
        error = _error(answer)
        if error is None:
            continue
        held = held_fields(error)
        if held and mode == "take":
            continue
        if held:
            fields = ", ".join(f'{h["field"]} is held by field manager "{h["manager"]}"' for h in held)
            lines.append(f"{ref(obj)}: {fields}")
        else:
            message = " ".join(str(error.get("msg") or "refused").split())
            lines.append(f"{ref(obj)}: {message[:400]}")
    return lines


def failure_message(lines: Sequence[str], component: str, mode: str) -> str:
    text = f"The API server did not take {len(lines)} object(s) of {component}: " + "; ".join(lines)
    if mode == "fail" and any("held by field manager" in line for line in lines):
        text += (
            ". Another field manager changed fields this collection sets, and they were left as they are. Undo "
            "that change, or set gpufabric_field_conflicts: take to apply the planned values over it"
        )
    return text
