# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a server-side apply would change nothing: then it need not be sent.

A server-side apply of configuration C by field manager M leaves an object L as it is when
(1) every field of C has its value in L, and (2) the fields M owns by apply (L's managedFields
entry of M, operation Apply, in the fieldsV1 format of structured-merge-diff) are exactly the
fields of C: a field M owns that C no longer has would be removed, a field of C that M does not
own would be taken into M's ownership. `unchanged()` checks both by walking C, L and M's field
set together; the field set says how each list is merged (``k:`` keyed by fields, ``v:`` a set of
values, none: atomic). Whatever it cannot tell (a list element without its key in the field
set, a null, an empty map, a field set of an unknown shape) counts as a change, so that the apply
is sent and the API server decides: a skipped apply is always one that would have changed
nothing; a needless one costs a request only.

Pure Python (3.8), no Ansible imports.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

# What the API server does not track in managed fields: the object's identity.
_IDENTITY = ("apiVersion", "kind")
_META_IDENTITY = ("name", "namespace")


def owned_fields(live: Mapping[str, Any], manager: str) -> Optional[Mapping[str, Any]]:
    """The fieldsV1 of `manager`'s apply entry in `live`'s managedFields (the main resource, not a
    subresource), or None when it has none."""
    entries = [
        e
        for e in ((live.get("metadata") or {}).get("managedFields") or [])
        if isinstance(e, Mapping)
        and e.get("manager") == manager
        and e.get("operation") == "Apply"
        and not e.get("subresource")
    ]
    if len(entries) != 1 or entries[0].get("fieldsType", "FieldsV1") != "FieldsV1":
        return None
    fields = entries[0].get("fieldsV1")
    return fields if isinstance(fields, Mapping) else None


def unchanged(desired: Mapping[str, Any], live: Optional[Mapping[str, Any]], manager: str) -> bool:
    """True when applying `desired` as `manager` would leave `live` as it is (see the module's doc)."""
    if not live:
        return False
    fields = owned_fields(live, manager)
    if fields is None:
        return False
    body = {k: v for k, v in desired.items() if k not in _IDENTITY and k != "status"}
    meta = {k: v for k, v in (desired.get("metadata") or {}).items() if k not in _META_IDENTITY}
    if meta:
        body["metadata"] = meta
    else:
        body.pop("metadata", None)
    return _same_map(body, live, fields)


def _children(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    return {k: v for k, v in fields.items() if k != "."}


def _same_map(want: Mapping[str, Any], have: Any, fields: Mapping[str, Any]) -> bool:
    if not isinstance(have, Mapping) or not want:
        return False
    children = _children(fields)
    if set(children) != {"f:" + str(k) for k in want}:
        return False
    return all(_same(value, have.get(key), children["f:" + str(key)]) for key, value in want.items())


def _same(want: Any, have: Any, fields: Any) -> bool:
    if not isinstance(fields, Mapping) or want is None:
        return False
    if isinstance(want, Mapping):
        if not _children(fields):  # an atomic map: the whole value is the field
            return _equal(want, have)
        return _same_map(want, have, fields)
    if isinstance(want, list):
        return _same_list(want, have, fields)
    return not _children(fields) and _scalar_equal(want, have)


def _same_list(want: list, have: Any, fields: Mapping[str, Any]) -> bool:
    if not isinstance(have, list):
        return False
    children = _children(fields)
    if not children:  # atomic: the whole list is set
        return len(want) == len(have) and all(_equal(w, h) for w, h in zip(want, have))
    if all(k.startswith("v:") for k in children):  # a set of scalar values
        try:
            values = {json.dumps(json.loads(k[2:]), sort_keys=True) for k in children}
        except ValueError:
            return False
        wanted = {json.dumps(v, sort_keys=True) for v in want}
        present = {json.dumps(v, sort_keys=True) for v in have}
        return len(wanted) == len(want) and values == wanted and wanted <= present
    if not all(k.startswith("k:") for k in children) or len(children) != len(want):
        return False
    for key, sub in children.items():
        try:
            ident = json.loads(key[2:])
        except ValueError:
            return False
        if not isinstance(ident, Mapping):
            return False
        mine = [w for w in want if isinstance(w, Mapping) and all(w.get(k) == v for k, v in ident.items())]
        theirs = [h for h in have if isinstance(h, Mapping) and all(h.get(k) == v for k, v in ident.items())]
        if len(mine) != 1 or len(theirs) != 1 or not _same_map(mine[0], theirs[0], sub):
            return False
    return True


def _equal(want: Any, have: Any) -> bool:
    """An atomic value: the apply sets it whole, so it is unchanged only when it is equal, every key
    and element (a default the API server added inside it counts as a change: the apply is sent)."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and set(want) == set(have) and all(_equal(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(_equal(w, h) for w, h in zip(want, have))
    return _scalar_equal(want, have)


def _scalar_equal(want: Any, have: Any) -> bool:
    return want is not None and type(want) is type(have) and want == have
