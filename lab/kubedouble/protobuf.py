"""Decoding of the Kubernetes protobuf wire format for the few built-in kinds clients send that way.

client-go sends typed objects as `application/vnd.kubernetes.protobuf`: the magic `k8s\\0` and a
runtime.Unknown {typeMeta{apiVersion, kind}, raw} whose raw bytes are the object message
(field numbers from k8s.io/api and k8s.io/apimachinery generated.proto). Helm stores releases in
Secrets this way; `kubectl create configmap|secret|namespace` and deletes send it too. The double
answers in JSON, which client-go accepts. Kinds without a table here get 415.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any, Dict, List, Optional, Tuple

from .errors import ApiError

MAGIC = b"k8s\x00"

# message name -> field number -> (json name, type); types: str, bytes, int, bool, msg:<Name>,
# map:str (map<string,string>), map:bytes (map<string,bytes>), time; a leading "*" means repeated.
MESSAGES: Dict[str, Dict[int, Tuple[str, str]]] = {
    "Unknown": {
        1: ("typeMeta", "msg:TypeMeta"),
        2: ("raw", "bytes"),
        3: ("contentEncoding", "str"),
        4: ("contentType", "str"),
    },
    "TypeMeta": {1: ("apiVersion", "str"), 2: ("kind", "str")},
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        4: ("selfLink", "str"),
        5: ("uid", "str"),
        6: ("resourceVersion", "str"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "time"),
        9: ("deletionTimestamp", "time"),
        10: ("deletionGracePeriodSeconds", "int"),
        11: ("labels", "map:str"),
        12: ("annotations", "map:str"),
        13: ("ownerReferences", "*msg:OwnerReference"),
        14: ("finalizers", "*str"),
    },
    "OwnerReference": {
        1: ("kind", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("controller", "bool"),
        7: ("blockOwnerDeletion", "bool"),
    },
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "Secret": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("data", "map:bytes"),
        3: ("type", "str"),
        4: ("stringData", "map:str"),
        5: ("immutable", "bool"),
    },
    "ConfigMap": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("data", "map:str"),
        3: ("binaryData", "map:bytes"),
        4: ("immutable", "bool"),
    },
    "Namespace": {1: ("metadata", "msg:ObjectMeta"), 2: ("spec", "msg:NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "*str")},
    "ServiceAccount": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("secrets", "*msg:ObjectReference"),
        3: ("imagePullSecrets", "*msg:LocalObjectReference"),
        4: ("automountServiceAccountToken", "bool"),
    },
    "ObjectReference": {
        1: ("kind", "str"),
        2: ("namespace", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("resourceVersion", "str"),
        7: ("fieldPath", "str"),
    },
    "LocalObjectReference": {1: ("name", "str")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int"),
        2: ("preconditions", "msg:Preconditions"),
        3: ("orphanDependents", "bool"),
        4: ("propagationPolicy", "str"),
        5: ("dryRun", "*str"),
    },
    "Preconditions": {1: ("uid", "str"), 2: ("resourceVersion", "str")},
    "Eviction": {1: ("metadata", "msg:ObjectMeta"), 2: ("deleteOptions", "msg:DeleteOptions")},
}
KINDS = {"Secret", "ConfigMap", "Namespace", "ServiceAccount", "DeleteOptions", "Eviction"}


def _varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> List[Tuple[int, int, Any]]:
    out = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            val = buf[pos : pos + length]
            pos += length
        elif wire == 1:
            val = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            val = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ApiError(400, f"protobuf: unsupported wire type {wire}")
        out.append((num, wire, val))
    return out


def decode_message(name: str, buf: bytes) -> Dict[str, Any]:
    table = MESSAGES[name]
    out: Dict[str, Any] = {}
    for num, _wire, val in _fields(buf):
        if num not in table:
            continue
        field, ftype = table[num]
        repeated = ftype.startswith("*")
        ftype = ftype.lstrip("*")
        if ftype.startswith("map:"):
            entry = {n: v for n, _w, v in _fields(val)}
            key = entry.get(1, b"").decode()
            raw = entry.get(2, b"")
            out.setdefault(field, {})[key] = base64.b64encode(raw).decode() if ftype == "map:bytes" else raw.decode()
            continue
        value = _scalar(ftype, val)
        if not repeated and value in ("", 0, False) and ftype in ("str", "int", "bool"):
            continue  # proto2 zero values that Go's JSON form omits (omitempty)
        if repeated:
            out.setdefault(field, []).append(value)
        else:
            out[field] = value
    return out


def _scalar(ftype: str, val: Any) -> Any:
    if ftype == "str":
        return val.decode()
    if ftype == "bytes":
        return val
    if ftype == "int":
        return val - (1 << 64) if val >= 1 << 63 else val
    if ftype == "bool":
        return bool(val)
    if ftype == "time":
        t = decode_message("Time", val)
        return datetime.datetime.fromtimestamp(t.get("seconds", 0), datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    if ftype.startswith("msg:"):
        return decode_message(ftype[4:], val)
    raise ApiError(400, f"protobuf: unknown field type {ftype}")


def decode_object(body: bytes) -> Dict[str, Any]:
    """A protobuf-encoded object (magic + runtime.Unknown) as its JSON form."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "protobuf: missing the k8s magic prefix")
    unknown = decode_message("Unknown", body[len(MAGIC) :])
    type_meta: Dict[str, Any] = unknown.get("typeMeta") or {}
    kind: Optional[str] = type_meta.get("kind")
    if kind not in KINDS:
        raise ApiError(
            415,
            "the double decodes protobuf only for {}; send {} as application/json".format(
                ", ".join(sorted(KINDS)), kind
            ),
            reason="UnsupportedMediaType",
        )
    obj = decode_message(kind, unknown.get("raw", b""))
    obj["apiVersion"] = type_meta.get("apiVersion", "v1")
    obj["kind"] = kind
    return obj
