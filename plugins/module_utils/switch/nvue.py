# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply a planned NVUE patch to a leaf through the NVUE REST API, and say beforehand what it
changes. The HTTP side is switch.nvue_api; here is what does not need a network, with the API
passed in (anything with ``request(method, path, body=None, rev=None)`` returning parsed JSON), so
the flow is tested against a fake.

What changes: only the settings the patch names are compared with the applied tree
(``GET /nvue_v1/?rev=applied``); a leaf of the patch (a value, or an empty object that only has to
exist, like ``pfc default-global switch-priority 3``) that the applied tree lacks or holds with
another value is a change. The rest of the switch's configuration is the network team's and is
neither read for the verdict nor touched: the root PATCH merges.

The flow, as NVIDIA's Cumulus Linux user guide "NVUE API" documents it
(https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/System-Configuration/NVIDIA-User-Experience-NVUE/NVUE-API/):
``POST /nvue_v1/revision`` (a new revision, its ID the one key of the answer), ``PATCH
/nvue_v1/?rev=ID`` with the patch, ``PATCH /nvue_v1/revision/ID`` with ``{"state": "apply",
"auto-prompt": {"ays": "ays_yes"}}``, then ``GET /nvue_v1/revision/ID`` until its state is
``applied`` (or a failure state, or the timeout). Nothing is created when nothing would change or in
check mode. After the apply the applied tree is read again: a setting the switch did not take is an
error, not a silent "changed".
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import running as _running

APPLY_BODY = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
APPLIED = "applied"
# States of a revision on its way to applied (an apply that asks or is being carried out);
# any other state after the apply request is a failure (apply_fail, ays_fail, invalid, ...).
IN_PROGRESS = frozenset(("pending", "apply", "applying", "ays", "ignore", "confirm"))

Path = Tuple[str, ...]


class NvueError(RuntimeError):
    """A failed request or apply; the message names the switch."""


def leaves(patch: Mapping[str, Any], prefix: Path = ()) -> List[Tuple[Path, Any]]:
    """[(path, value)] of every leaf of a patch; an empty object is a leaf (it has to exist)."""
    out: List[Tuple[Path, Any]] = []
    for key, value in patch.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            out.extend(leaves(value, path))
        else:
            out.append((path, value))
    return out


def lookup(tree: Any, path: Path) -> Tuple[bool, Any]:
    """(found, value) of ``path`` in ``tree``."""
    node = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _plain(value: Any) -> Any:
    """A value as compared: a number and its digits in a string are one value (NVUE may give either;
    running.number reads both, as the agreement check does)."""
    number = _running.number(value)
    return value if number is None else str(number)


def same(wanted: Any, found: Any) -> bool:
    if isinstance(wanted, Mapping) and not wanted:
        return isinstance(found, Mapping)  # an object that has to exist; what it holds is not ours
    return _plain(wanted) == _plain(found)


def changes(patch: Mapping[str, Any], applied: Any) -> List[Dict[str, Any]]:
    """[{path, before, after}] for each leaf of ``patch`` that ``applied`` lacks or holds otherwise;
    ``before`` is None where the setting is absent."""
    out = []
    for path, wanted in leaves(patch):
        found, value = lookup(applied, path)
        if not (found and same(wanted, value)):
            out.append({"path": " ".join(path), "before": value if found else None, "after": wanted})
    return out


def diff(switch: str, found: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Ansible's diff of the touched settings, one ``path: value`` line each (absent settings: not shown)."""

    def lines(key: str) -> str:
        return "".join(f"{c['path']}: {c[key]}\n" for c in found if c[key] is not None)

    return {
        "before_header": f"{switch} (rev=applied)",
        "after_header": f"{switch} (after the patch)",
        "before": lines("before"),
        "after": lines("after"),
    }


def revision_id(answer: Any, switch: str) -> str:
    """The ID of a revision from the answer of ``POST /nvue_v1/revision`` (``{ID: {state...}}``)."""
    if isinstance(answer, Mapping) and len(answer) == 1:
        return str(next(iter(answer)))
    raise NvueError(f"{switch}: POST /nvue_v1/revision did not answer with one revision: {str(answer)[:200]}")


def _issue(status: Mapping[str, Any]) -> str:
    issue = (status.get("transition") or {}).get("issue") if isinstance(status, Mapping) else None
    if not issue:
        return ""
    texts = [str(v.get("message", v)) if isinstance(v, Mapping) else str(v) for v in issue.values()]
    return " (" + "; ".join(texts) + ")"


def wait_applied(
    api: Any,
    switch: str,
    rev: str,
    timeout: float,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Poll the revision until it is applied; a failure state or the timeout raise NvueError
    naming the switch, the revision and the last state."""
    deadline = clock() + timeout
    state = None
    while True:
        status = api.request("GET", "revision/" + rev) or {}
        state = status.get("state") if isinstance(status, Mapping) else None
        if state == APPLIED:
            return
        if state not in IN_PROGRESS:
            raise NvueError(f"{switch}: revision {rev} was not applied: its state is {state}{_issue(status)}")
        if clock() >= deadline:
            raise NvueError(
                f"{switch}: revision {rev} was not applied within {timeout:g} s; its state is still {state}"
                f"{_issue(status)}. It may still apply: read rev=applied before running again"
            )
        sleep(interval)


def converge(
    api: Any,
    switch: str,
    patch: Mapping[str, Any],
    check_mode: bool,
    timeout: float,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Dict[str, Any]:
    """{changed, changes, revision}: what the patch changes on the switch, applied unless in check mode."""
    found = changes(patch, api.request("GET", "", rev="applied"))
    result: Dict[str, Any] = {"changed": bool(found), "changes": found, "revision": None}
    if not found or check_mode:
        return result
    rev = revision_id(api.request("POST", "revision"), switch)
    result["revision"] = rev
    api.request("PATCH", "", body=dict(patch), rev=rev)
    api.request("PATCH", "revision/" + rev, body=APPLY_BODY)
    wait_applied(api, switch, rev, timeout, interval, sleep, clock)
    left = changes(patch, api.request("GET", "", rev="applied"))
    if left:
        names = ", ".join(f"{c['path']} (wanted {c['after']}, found {c['before']})" for c in left)
        raise NvueError(f"{switch}: revision {rev} is applied but the switch does not hold: {names}")
    return result


def running(api: Any) -> Any:
    """The applied configuration tree (what the agreement check reads)."""
    return api.request("GET", "", rev="applied")


def api_error(switch: str, method: str, url: str, status: Optional[int], detail: str) -> NvueError:
    """One message for every failed request: switch, request, status and what the API said."""
    what = f"HTTP {status}" if status else "no answer"
    hint = ""
    if status == 401:
        hint = "; check gpufabric_switch_api_user and gpufabric_switch_api_password"
    elif status is None and "CERTIFICATE" in detail.upper():
        hint = "; the switch's certificate is not trusted: set gpufabric_switch_api_ca_path to its CA file"
    text = " ".join(detail.split())[:300]  # one line, however the API formats its answer
    return NvueError(f"{switch}: {method} {url}: {what}: {text}{hint}")
