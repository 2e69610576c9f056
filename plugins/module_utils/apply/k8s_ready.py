# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a list of Kubernetes objects to be ready, in one loop with one client.

A role waits for several objects at once: the CRDs it applied (their ``Established`` condition)
or the operator's policies (their ``status.state``). Each object is read once per round; those
already ready are not read again; the wait ends when every object is ready or the time is spent.
A round with nothing left to wait for ends at once, so a run where everything is ready makes one
read per object.

What is ready:
- ``{"condition": {"type": T, "status": S}}``: ``status.conditions`` holds an entry of type T
  whose status is S (the CRD's ``Established``/``"True"``, as ``kubectl wait --for=condition``);
- ``{"state": V}``: ``status.state`` equals V (the NVIDIA operators' ``ready``).

Pure Python (3.8), no Ansible imports: ``read(ref)`` returns the object as a dict, or None when
it does not exist (or its kind is not served).
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

# Where each part of a reference is in the object.
WHERE = {"api_version": "apiVersion", "kind": "kind", "name": "metadata.name", "namespace": "metadata.namespace"}


def refs(objects: Any) -> Tuple[List[Dict[str, str]], List[str]]:
    """(refs, problems): each object (apiVersion, kind, metadata.name[, metadata.namespace], as the
    collection's manifests and k8s_apply have them) as {api_version, kind, name, namespace}."""
    if not isinstance(objects, list):
        kind = type(objects).__name__
        return [], [f"objects: must be a list of objects (apiVersion, kind, metadata.name), got {kind}"]
    out: List[Dict[str, str]] = []
    bad: List[str] = []
    for index, obj in enumerate(objects):
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        if not isinstance(meta, Mapping):
            bad.append(f"objects[{index}]: must be an object with apiVersion, kind and metadata.name")
            continue
        ref = {
            "api_version": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "",
        }
        wrong = [WHERE[k] for k, v in ref.items() if not isinstance(v, str) or (not v and k != "namespace")]
        if wrong:
            bad.append(f"objects[{index}]: {', '.join(wrong)} must be a non-empty string")
            continue
        out.append(ref)
    return out, bad


def crd_objects(names: Any) -> List[Dict[str, Any]]:
    """The CustomResourceDefinitions of these names, as objects for refs()."""
    return [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}
        for name in names
    ]


def problems(condition: Any, state: Any, timeout: Any, delay: Any) -> List[str]:
    """What is wrong with the other arguments, each naming the option; empty when they are usable."""
    out = []
    if (condition is None) == (state is None):
        out.append("condition, state: give exactly one (condition {type, status}, or state, the value of status.state)")
    if condition is not None and (
        not isinstance(condition, Mapping)
        or sorted(condition) != ["status", "type"]
        or not all(isinstance(v, str) and v for v in condition.values())
    ):
        out.append("condition: must be {type: <condition type>, status: True|False|Unknown}")
    for name, value in (("timeout", timeout), ("delay", delay)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            out.append(f"{name}: must be a number of seconds, at least 0, got {value!r}")
    if not out and delay == 0 and timeout > 0:
        out.append("delay: must be above 0 when timeout is above 0")
    return out


def label(ref: Mapping[str, Any]) -> str:
    """Kind/name, or Kind/namespace/name."""
    namespace = ref.get("namespace")
    return f"{ref['kind']}/{namespace}/{ref['name']}" if namespace else f"{ref['kind']}/{ref['name']}"


def judge(obj: Optional[Mapping[str, Any]], condition: Optional[Mapping[str, str]], state: Optional[str]):
    """(ready, why) of one object as read; ``why`` says what it lacks when it is not ready."""
    if obj is None:
        return False, "not found"
    status = obj.get("status") or {}
    if not isinstance(status, Mapping):
        status = {}
    if condition is not None:
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        found = [c for c in conditions if c.get("type") == condition["type"]]
        if any(str(c.get("status")) == condition["status"] for c in found):
            return True, f"{condition['type']} is {condition['status']}"
        if not found:
            return False, f"no {condition['type']} condition"
        c = found[0]
        why = f"{condition['type']} is {c.get('status')}"
        detail = ": ".join(str(c[k]) for k in ("reason", "message") if c.get(k))
        return False, f"{why} ({detail})" if detail else why
    if status.get("state") == state:
        return True, f"status.state is {state}"
    return False, "status " + _short(status)


def _short(status: Mapping[str, Any], limit: int = 600) -> str:
    """The status as JSON, its state, reason and message first (what a reader needs when it is cut)."""
    first = [key for key in ("state", "reason", "message") if key in status]
    ordered = {key: status[key] for key in first + sorted(k for k in status if k not in first)}
    text = json.dumps(ordered, default=str) if status else "(none)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def wait(
    read: Callable[[Mapping[str, Any]], Optional[Mapping[str, Any]]],
    objects: List[Mapping[str, Any]],
    condition: Optional[Mapping[str, str]],
    state: Optional[str],
    timeout: float,
    delay: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> List[Dict[str, Any]]:
    """[{object, found, ready, why}] in the order given, after reading each object until it is ready.

    The objects not yet ready are read again every ``delay`` seconds, until none is left or
    ``timeout`` seconds have passed (``timeout`` 0: one read each). An error from ``read`` (other
    than an object or kind that does not exist, which ``read`` answers with None) ends the wait.
    """
    results: List[Dict[str, Any]] = [
        {"object": label(ref), "found": False, "ready": False, "why": "not read"} for ref in objects
    ]
    deadline = clock() + timeout
    pending = list(range(len(objects)))
    while True:
        for index in pending:
            obj = read(objects[index])
            ready, why = judge(obj, condition, state)
            results[index].update(found=obj is not None, ready=ready, why=why)
        pending = [index for index in pending if not results[index]["ready"]]
        left = deadline - clock()
        if not pending or left <= 0:
            return results
        sleep(min(delay, left))


def failure_message(results: List[Mapping[str, Any]], timeout: float) -> str:
    """One line per object that is not ready, naming it and what it lacks; empty when all are."""
    late = [r for r in results if not r["ready"]]
    return "; ".join(f"{r['object']} is not ready after {_seconds(timeout)} s: {r['why']}" for r in late)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
