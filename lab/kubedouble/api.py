"""API semantics independent of HTTP: create, read, list, update, patch, apply, delete,
subresources, CRD registration, finalizers, namespace cascade and owner garbage collection."""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime
import random
import re
import string
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import patch as patches
from . import schema as schemas
from . import ssa
from .errors import ApiError, FieldError, already_exists, conflict, invalid, not_found
from .resources import MERGE_SETS, Registry, ResourceType, crd_types, list_merge_key
from .selectors import field_matcher, label_matcher, selector_matches
from .store import Store

_STALE = "the object has been modified; please apply your changes to the latest version and try again"


def _check_fresh(rt: ResourceType, name: str, body: Dict[str, Any], current: Dict[str, Any]) -> None:
    """Optimistic concurrency: a write that names a resourceVersion must name the current one (409 otherwise)."""
    rv = (body.get("metadata") or {}).get("resourceVersion")
    if rv and rv != current["metadata"]["resourceVersion"]:
        raise conflict(rt.plural, rt.group, name, _STALE)


DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SYSTEM_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Request:
    """What a write needs to know besides the object: manager, dry run, strictness."""

    def __init__(
        self, manager: str = "", dry_run: bool = False, strict: bool = False, force: bool = False, explicit: bool = True
    ) -> None:
        self.manager = manager
        self.explicit = explicit  # the manager came from ?fieldManager (apply requires that)
        self.dry_run = dry_run
        self.strict = strict
        self.force = force


class Api:
    def __init__(self) -> None:
        self.registry = Registry()
        self.store = Store()
        self.on_write: List[Callable[[ResourceType, Dict[str, Any]], None]] = []
        self._service_ips = 10
        for ns in DEFAULT_NAMESPACES:
            self.create(self.type("", "v1", "namespaces"), "", {"metadata": {"name": ns}}, Request("kube-double"))

    # ------------------------------------------------------------------ lookup helpers
    def type(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.get(group, version, plural)
        if rt is None:
            raise ApiError(404, "the server could not find the requested resource")
        return rt

    @staticmethod
    def res(rt: ResourceType) -> Tuple[str, str]:
        return (rt.group, rt.plural)

    def _present(self, rt: ResourceType, obj: Dict[str, Any]) -> Dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = rt.api_version
        out["kind"] = rt.kind
        return out

    def get(self, rt: ResourceType, ns: str, name: str) -> Dict[str, Any]:
        obj = self.store.get(self.res(rt), ns if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return self._present(rt, obj)

    def list(
        self,
        rt: ResourceType,
        ns: Optional[str],
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        cont: str = "",
    ) -> Dict[str, Any]:
        match = self.matcher(label_selector, field_selector)
        items = [
            self._present(rt, o) for o in self.store.items(self.res(rt), ns if rt.namespaced else None) if match(o)
        ]
        meta: Dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        start = int(cont) if cont.isdigit() else 0
        if limit and limit > 0:
            if start + limit < len(items):
                meta["continue"] = str(start + limit)
                meta["remainingItemCount"] = len(items) - start - limit
            items = items[start : start + limit]
        return {"kind": rt.kind + "List", "apiVersion": rt.api_version, "metadata": meta, "items": items}

    @staticmethod
    def matcher(label_selector: str, field_selector: str) -> Callable[[Dict[str, Any]], bool]:
        lm = label_matcher(label_selector)
        fm = field_matcher(field_selector)
        return lambda o: lm(o) and fm(o)

    def policy(self, rt: ResourceType) -> patches.ListPolicy:
        """How lists of this type merge: built-in merge keys, or the CRD schema's list types."""
        if rt.custom:

            def custom(names: Tuple[str, ...], items: List[Any]) -> Any:
                if names[:1] == ("metadata",):
                    return _meta_policy(names)
                node = _schema_by_names(rt.schema, names)
                if not node:
                    return None
                if node.get("x-kubernetes-list-type") == "map":
                    return tuple(node.get("x-kubernetes-list-map-keys") or ())
                if node.get("x-kubernetes-list-type") == "set":
                    return "set"
                return None

            return custom

        def builtin(names: Tuple[str, ...], items: List[Any]) -> Any:
            if names[:1] == ("metadata",):
                return _meta_policy(names)
            if not names:
                return None
            if names[-1] in MERGE_SETS:
                return "set"
            key = list_merge_key(names[-1], items)
            return (key,) if key else None

        return builtin

    # ------------------------------------------------------------------ create
    def create(self, rt: ResourceType, ns: str, body: Any, req: Request) -> Dict[str, Any]:
        obj = self._check_body(rt, ns, body)
        meta = obj["metadata"]
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    random.choice(string.ascii_lowercase + string.digits) for _unused in range(5)
                )
            else:
                raise invalid(
                    rt.kind,
                    rt.group,
                    "",
                    [FieldError("FieldValueRequired", "metadata.name", "name or generateName is required")],
                )
        name = meta["name"]
        if rt.namespaced:
            self._require_namespace(ns, creating=True)
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        self._validate_name(rt, name)
        if self.store.get(self.res(rt), ns if rt.namespaced else "", name) is not None:
            raise already_exists(rt.plural, rt.group, name)
        for key in (*SYSTEM_META, "resourceVersion"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.has_generation:
            meta["generation"] = 1
        if "status" in rt.subresources and not (rt.plural == "pods" and req.manager == "kube-double-seed"):
            obj.pop("status", None) if rt.custom or rt.has_generation else None
        if "status" in rt.structs and obj.get("status") is None:
            obj["status"] = copy.deepcopy(rt.zero_status)
        self._defaults_on_create(rt, obj)
        self._normalise(rt, obj, req)
        managed = ssa.Managed(None)
        managed.record_update(None, obj, req.manager or "unknown", "", self.policy(rt), rt.api_version, now())
        if obj.get("status") and "status" in rt.subresources:
            managed.record_update(None, obj, req.manager or "unknown", "status", self.policy(rt), rt.api_version, now())
        meta["managedFields"] = managed.render()
        if req.dry_run:
            return self._present(rt, obj)
        stored = self.store.put(self.res(rt), obj, created=True)
        self._after_write(rt, stored)
        return self._present(rt, stored)

    def _defaults_on_create(self, rt: ResourceType, obj: Dict[str, Any]) -> None:
        """The few server-set fields clients depend on (namespace phase, CRD conditions)."""
        meta = obj["metadata"]
        if rt.plural == "namespaces" and not rt.group:
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
            obj["status"] = {"phase": "Active"}
        if rt.plural == "services" and not rt.group:
            # The service IP allocator is part of the API server (not defaulting): Helm's --wait
            # treats a Service without a cluster IP as not ready.
            spec = obj.setdefault("spec", {})
            if spec.get("type") != "ExternalName" and not spec.get("clusterIP"):
                self._service_ips += 1
                third, fourth = divmod(self._service_ips, 254)
                ip = f"10.96.{third}.{fourth + 1}"
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
        if rt.plural == "customresourcedefinitions":
            finals = meta.setdefault("finalizers", [])
            if CRD_FINALIZER not in finals:
                finals.append(CRD_FINALIZER)

    def _check_body(self, rt: ResourceType, ns: str, body: Any) -> Dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(
                400,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml, application/vnd.kubernetes.protobuf",
            )
        obj = copy.deepcopy(body)
        if obj.get("kind") and obj["kind"] != rt.kind:
            raise ApiError(
                400,
                "the API version in the data ({}) does not match the expected API version ({})".format(
                    obj.get("apiVersion"), rt.api_version
                )
                if obj.get("apiVersion") != rt.api_version
                else '{} in version "{}" cannot be handled as a {}: kind mismatch'.format(
                    obj["kind"], rt.version, rt.kind
                ),
            )
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        for struct in rt.structs:
            if obj.get(struct) is None:
                obj[struct] = copy.deepcopy(rt.zero_status) if struct == "status" else {}
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if rt.namespaced and meta.get("namespace") and ns and meta["namespace"] != ns:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        return obj

    def _validate_name(self, rt: ResourceType, name: str) -> None:
        pattern = DNS1123_LABEL if rt.plural in ("namespaces", "services") and not rt.group else DNS1123_SUBDOMAIN
        if len(name) > 253 or not pattern.match(name):
            what = "RFC 1123 label" if pattern is DNS1123_LABEL else "RFC 1123 subdomain"
            raise invalid(
                rt.kind,
                rt.group,
                name,
                [
                    FieldError(
                        "FieldValueInvalid",
                        "metadata.name",
                        f"a lowercase {what} must consist of lower case alphanumeric "
                        "characters, '-' or '.', and must start and end with an alphanumeric character",
                        name,
                        True,
                    )
                ],
            )

    def _require_namespace(self, ns: str, creating: bool) -> None:
        if not ns:
            raise ApiError(400, "the server could not find the requested resource (a namespace is required)")
        nso = self.store.get(("", "namespaces"), "", ns)
        if nso is None:
            raise not_found("namespaces", "", ns)
        if creating and nso["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                f"unable to create new content in namespace {ns} because it is being terminated",
                reason="Forbidden",
                details={
                    "name": ns,
                    "kind": "namespaces",
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {ns} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _normalise(self, rt: ResourceType, obj: Dict[str, Any], req: Request) -> None:
        """Secret stringData folding, CRD checks and custom resource schema validation."""
        if rt.plural == "secrets" and not rt.group and obj.get("stringData"):
            data = obj.setdefault("data", {}) or {}
            for key, value in obj.pop("stringData").items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            obj["data"] = data
        obj.pop("stringData", None) if rt.plural == "secrets" else None
        if rt.plural == "customresourcedefinitions":
            self._validate_crd(obj)
        if rt.custom and rt.schema:
            dropped = schemas.prune(rt.schema, obj)
            if dropped and req.strict:
                raise ApiError(
                    400, "strict decoding error: {}".format(", ".join(f'unknown field "{d}"' for d in dropped))
                )
            errors = schemas.validate(rt.schema, obj)
            if errors:
                raise invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), errors)

    def _validate_crd(self, crd: Dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        errors: List[FieldError] = []
        name = crd["metadata"].get("name", "")
        if not spec.get("group"):
            errors.append(FieldError("FieldValueRequired", "spec.group"))
        if not names.get("plural"):
            errors.append(FieldError("FieldValueRequired", "spec.names.plural"))
        if not names.get("kind"):
            errors.append(FieldError("FieldValueRequired", "spec.names.kind"))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            errors.append(
                FieldError(
                    "FieldValueNotSupported",
                    "spec.scope",
                    'supported values: "Cluster", "Namespaced"',
                    spec.get("scope"),
                    True,
                )
            )
        versions = spec.get("versions") or []
        if not versions:
            errors.append(
                FieldError(
                    "FieldValueRequired", "spec.versions", "must have exactly one version marked as storage version"
                )
            )
        elif sum(1 for v in versions if v.get("storage")) != 1:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    versions and "array",
                    False,
                )
            )
        if names.get("plural") and spec.get("group") and name != "{}.{}".format(names["plural"], spec["group"]):
            errors.append(
                FieldError("FieldValueInvalid", "metadata.name", 'must be spec.names.plural+"."+spec.group', name, True)
            )
        if errors:
            raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, errors)
        stamp = now()
        old = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}
        conds = []
        for ctype, reason, msg in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ):
            cond = {
                "type": ctype,
                "status": "True",
                "reason": reason,
                "message": msg,
                "lastTransitionTime": old.get(ctype, {}).get("lastTransitionTime", stamp),
            }
            conds.append(cond)
        crd["status"] = {
            "conditions": conds,
            "acceptedNames": dict(names),
            "storedVersions": [v["name"] for v in versions if v.get("storage")],
        }

    # ------------------------------------------------------------------ update / patch / apply
    def _existing(self, rt: ResourceType, ns: str, name: str) -> Dict[str, Any]:
        old = self.store.get(self.res(rt), ns if rt.namespaced else "", name)
        if old is None:
            raise not_found(rt.plural, rt.group, name)
        return old

    def update(
        self, rt: ResourceType, ns: str, name: str, body: Any, req: Request, subresource: str = ""
    ) -> Dict[str, Any]:
        old = self._existing(rt, ns, name)
        obj = self._check_body(rt, ns, body)
        if obj["metadata"].get("name") and obj["metadata"]["name"] != name:
            raise ApiError(
                400,
                "the name of the object ({}) does not match the name on the URL ({})".format(
                    obj["metadata"]["name"], name
                ),
            )
        _check_fresh(rt, name, obj, old)
        if "managedFields" not in obj["metadata"]:
            obj["metadata"]["managedFields"] = old["metadata"].get("managedFields")
        return self._commit(rt, old, obj, req, subresource, "update")

    def patch(
        self, rt: ResourceType, ns: str, name: str, body: Any, content_type: str, req: Request, subresource: str = ""
    ) -> Dict[str, Any]:
        if content_type.startswith("application/apply-patch"):
            return self.apply(rt, ns, name, body, req, subresource)
        old = self._existing(rt, ns, name)
        current = self._present(rt, old)
        if content_type.startswith("application/json-patch+json"):
            new = patches.json_patch(current, body)
        elif content_type.startswith("application/merge-patch+json"):
            new = patches.merge_patch(current, body)
        elif content_type.startswith("application/strategic-merge-patch+json"):
            if rt.custom:
                raise ApiError(
                    415,
                    "strategic merge patch is not supported for {}".format(f"{rt.kind}.{rt.group}"),
                    reason="UnsupportedMediaType",
                )
            if not isinstance(body, dict):
                raise ApiError(400, "strategic merge patch must be a JSON object")
            new = patches.strategic_merge(current, body, self.policy(rt))
        else:
            raise ApiError(
                415,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                reason="UnsupportedMediaType",
            )
        if not isinstance(new, dict):
            raise ApiError(422, "patch produced a non-object")
        _check_fresh(rt, name, new, old)
        new = self._check_body(rt, ns, new)
        return self._commit(rt, old, new, req, subresource, "patch")

    def apply(
        self, rt: ResourceType, ns: str, name: str, config: Any, req: Request, subresource: str = ""
    ) -> Dict[str, Any]:
        """Server-side apply: create when missing, otherwise merge with ownership and conflicts."""
        if not req.manager or not req.explicit:
            raise ApiError(400, "PATCH, fieldManager: Required value: is required for apply patch")
        config = self._check_body(rt, ns, config)
        if config["metadata"].get("name") and config["metadata"]["name"] != name:
            raise ApiError(
                400,
                "the name of the object ({}) does not match the name on the URL ({})".format(
                    config["metadata"]["name"], name
                ),
            )
        config["metadata"]["name"] = name
        old = self.store.get(self.res(rt), ns if rt.namespaced else "", name)
        if old is None:
            if subresource:
                raise not_found(rt.plural, rt.group, name)
            created = self.create(rt, ns, _strip_meta(config), Request(req.manager, req.dry_run, req.strict))
            # Re-record ownership as Apply (create recorded an Update).
            stored = self.store.get(self.res(rt), ns if rt.namespaced else "", name) or created
            managed = ssa.Managed(None)
            managed.apply(stored, config, req.manager, True, "", self.policy(rt), rt.api_version, now())
            if req.dry_run:
                created["metadata"]["managedFields"] = managed.render()
                return created
            stored = copy.deepcopy(stored)
            stored["metadata"]["managedFields"] = managed.render()
            data = self.store.data[self.res(rt)]
            data[(ns if rt.namespaced else "", name)]["metadata"]["managedFields"] = stored["metadata"]["managedFields"]
            return self._present(rt, data[(ns if rt.namespaced else "", name)])
        _check_fresh(rt, name, config, old)
        managed = ssa.Managed(old["metadata"].get("managedFields"))
        live = self._present(rt, old)
        merged = managed.apply(
            live, _strip_meta(config), req.manager, req.force, subresource, self.policy(rt), rt.api_version, now()
        )
        merged["metadata"]["managedFields"] = managed.render()
        return self._commit(rt, old, merged, req, subresource, "apply")

    def _commit(
        self, rt: ResourceType, old: Dict[str, Any], new: Dict[str, Any], req: Request, subresource: str, operation: str
    ) -> Dict[str, Any]:
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for key in (*SYSTEM_META, "name", "namespace"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if "status" in rt.subresources:
            if subresource == "status":
                status = new.get("status")
                new = copy.deepcopy(self._present(rt, old))
                new["metadata"]["managedFields"] = meta.get("managedFields")
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
                meta = new["metadata"]
            elif "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if rt.plural == "namespaces" and not rt.group:
            new["spec"] = copy.deepcopy(old.get("spec", {}))
            if subresource != "status":
                new["status"] = copy.deepcopy(old.get("status", {}))
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        if rt.plural == "customresourcedefinitions" and subresource != "status" and _crd_id(old) != _crd_id(new):
            raise invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                meta["name"],
                [
                    FieldError(
                        "FieldValueInvalid",
                        "spec.group",
                        "field is immutable",
                        new.get("spec", {}).get("group"),
                        True,
                    )
                ],
            )
        if meta.get("deletionTimestamp") and operation != "finalize":
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise invalid(
                    rt.kind,
                    rt.group,
                    meta["name"],
                    [
                        FieldError(
                            "FieldValueForbidden",
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is "
                            f"being deleted, found new finalizers {sorted(added)}",
                        )
                    ],
                )
        self._normalise(rt, new, req)
        if rt.has_generation and _spec_of(new) != _spec_of(self._present(rt, old)):
            meta["generation"] = int(old_meta.get("generation") or 1) + 1
        if operation != "apply":
            managed = ssa.Managed(
                meta.get("managedFields") if "managedFields" in meta else old_meta.get("managedFields")
            )
            if isinstance(meta.get("managedFields"), list) and meta.get("managedFields") == []:
                managed = ssa.Managed(None)
            managed.record_update(
                self._present(rt, old),
                new,
                req.manager or "unknown",
                subresource,
                self.policy(rt),
                rt.api_version,
                now(),
            )
            meta["managedFields"] = managed.render()
        if _comparable(new) == _comparable(self._present(rt, old)):
            return self._present(rt, old)
        if req.dry_run:
            return self._present(rt, new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            gone = self.store.remove(self.res(rt), meta.get("namespace", ""), meta["name"])
            self._after_delete(rt, gone or new)
            return self._present(rt, new)
        stored = self.store.put(self.res(rt), new, created=False)
        self._after_write(rt, stored)
        return self._present(rt, stored)

    # ------------------------------------------------------------------ delete
    def delete(
        self, rt: ResourceType, ns: str, name: str, options: Optional[Dict[str, Any]], req: Request
    ) -> Dict[str, Any]:
        old = self._existing(rt, ns, name)
        opts = options or {}
        pre = opts.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "Precondition failed: UID in precondition: {}, UID in object meta: {}".format(
                    pre["uid"], old["metadata"]["uid"]
                ),
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}".format(
                    pre["resourceVersion"], old["metadata"]["resourceVersion"]
                ),
            )
        if req.dry_run:
            return self._present(rt, old)
        orphan = opts.get("propagationPolicy") == "Orphan" or opts.get("orphanDependents") is True
        is_namespace = rt.plural == "namespaces" and not rt.group
        if old["metadata"].get("finalizers") or is_namespace:
            if old["metadata"].get("deletionTimestamp"):
                return self._present(rt, old)
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if is_namespace:
                new["status"] = {"phase": "Terminating"}
            stored = self.store.put(self.res(rt), new, created=False)
            self._reconcile_terminating()
            current = self.store.get(self.res(rt), ns if rt.namespaced else "", name)
            return self._present(rt, current or stored)
        gone = self.store.remove(self.res(rt), ns if rt.namespaced else "", name)
        self._after_delete(rt, gone, orphan)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": old["metadata"]["uid"]},
        }

    def delete_collection(
        self, rt: ResourceType, ns: Optional[str], label_selector: str, field_selector: str, req: Request
    ) -> Dict[str, Any]:
        listed = self.list(rt, ns, label_selector, field_selector)
        for item in listed["items"]:
            with contextlib.suppress(ApiError):
                self.delete(rt, item["metadata"].get("namespace", ""), item["metadata"]["name"], None, req)
        return listed

    def _after_delete(self, rt: ResourceType, gone: Optional[Dict[str, Any]], orphan: bool = False) -> None:
        if gone is None:
            return
        if rt.plural == "customresourcedefinitions":
            for t in self.registry.remove_crd(gone["metadata"]["name"]):
                self.store.drop_resource(self.res(t))
        self._collect_garbage(gone["metadata"]["uid"], orphan)
        self._reconcile_terminating()
        for hook in self.on_write:
            hook(rt, gone)

    def _collect_garbage(self, uid: str, orphan: bool) -> None:
        """Owner-reference garbage collection (background, or orphaning)."""
        for (group, plural), objs in list(self.store.data.items()):
            rts = self.registry.storage_types(group, plural)
            if not rts:
                continue
            for obj in list(objs.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == uid for r in refs):
                    continue
                meta = obj["metadata"]
                if orphan:
                    new = copy.deepcopy(obj)
                    new["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                    if not new["metadata"]["ownerReferences"]:
                        del new["metadata"]["ownerReferences"]
                    self.store.put((group, plural), new, created=False)
                else:
                    with contextlib.suppress(ApiError):
                        self.delete(
                            rts[0], meta.get("namespace", ""), meta["name"], None, Request("generic-garbage-collector")
                        )

    def _reconcile_terminating(self) -> None:
        """Namespace cascade and CRD cleanup, run after every delete and finalizer removal."""
        for ns_obj in list(self.store.items(("", "namespaces"))):
            if not ns_obj["metadata"].get("deletionTimestamp"):
                continue
            ns = ns_obj["metadata"]["name"]
            remaining = False
            for (group, plural), obj in self.store.namespaced_items(ns):
                remaining = True
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                rts = self.registry.storage_types(group, plural)
                if rts:
                    with contextlib.suppress(ApiError):
                        self.delete(rts[0], ns, obj["metadata"]["name"], None, Request("namespace-controller"))
            if remaining and self.store.namespaced_items(ns):
                continue
            self.store.remove(("", "namespaces"), "", ns)
        crd_rt = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        for crd in list(self.store.items(("apiextensions.k8s.io", "customresourcedefinitions"))):
            meta = crd["metadata"]
            if not meta.get("deletionTimestamp") or CRD_FINALIZER not in (meta.get("finalizers") or []):
                continue
            group = crd["spec"]["group"]
            plural = crd["spec"]["names"]["plural"]
            rts = self.registry.storage_types(group, plural)
            left = self.store.items((group, plural))
            for obj in left:
                if not obj["metadata"].get("deletionTimestamp") and rts:
                    with contextlib.suppress(ApiError):
                        self.delete(
                            rts[0],
                            obj["metadata"].get("namespace", ""),
                            obj["metadata"]["name"],
                            None,
                            Request("apiextensions-controller"),
                        )
            if self.store.items((group, plural)):
                continue
            new = copy.deepcopy(crd)
            new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != CRD_FINALIZER]
            if crd_rt is not None:
                self._commit(crd_rt, crd, new, Request("apiextensions-controller"), "", "finalize")

    def _after_write(self, rt: ResourceType, stored: Dict[str, Any]) -> None:
        if rt.plural == "customresourcedefinitions" and rt.group == "apiextensions.k8s.io":
            # Re-register (an update may add versions); a terminating CRD keeps serving until gone.
            self.registry.remove_crd(stored["metadata"]["name"])
            for t in crd_types(stored):
                self.registry.add(t)
        for hook in self.on_write:
            hook(rt, stored)

    # ------------------------------------------------------------------ scale and eviction
    def get_scale(self, rt: ResourceType, ns: str, name: str) -> Dict[str, Any]:
        obj = self.get(rt, ns, name)
        spec_path, status_path, selector_path = _scale_paths(rt)
        selector = _dig(obj, selector_path)
        if isinstance(selector, dict):
            selector = ",".join("{}={}".format(*kv) for kv in sorted((selector.get("matchLabels") or {}).items()))
        meta = obj["metadata"]
        scale = {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
            },
            "spec": {"replicas": _dig(obj, spec_path) if _dig(obj, spec_path) is not None else 1},
            "status": {"replicas": _dig(obj, status_path) or 0},
        }
        if selector:
            scale["status"]["selector"] = selector
        return scale

    def set_scale(
        self, rt: ResourceType, ns: str, name: str, body: Any, content_type: str, req: Request
    ) -> Dict[str, Any]:
        current = self.get_scale(rt, ns, name)
        if content_type in ("", "application/json"):
            desired = body
            _check_fresh(rt, name, body, current)
        elif content_type.startswith("application/json-patch"):
            desired = patches.json_patch(current, body)
        else:
            desired = patches.merge_patch(current, body)
        replicas = (desired.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise invalid(
                "Scale",
                "autoscaling",
                name,
                [
                    FieldError(
                        "FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0", replicas, True
                    )
                ],
            )
        obj = self.get(rt, ns, name)
        spec_path = _scale_paths(rt)[0]
        _set(obj, spec_path, replicas)
        self.update(rt, ns, name, obj, req)
        return self.get_scale(rt, ns, name)

    def evict(self, ns: str, name: str, body: Any, req: Request) -> Dict[str, Any]:
        pods = self.type("", "v1", "pods")
        pod = self.get(pods, ns, name)
        labels = pod["metadata"].get("labels") or {}
        if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
            "Succeeded",
            "Failed",
            "Pending",
        ):
            budgets = []
        else:
            budgets = [
                b
                for b in self.store.items(("policy", "poddisruptionbudgets"), ns)
                if selector_matches((b.get("spec") or {}).get("selector") or {}, labels)
            ]
        if len(budgets) > 1:
            raise ApiError(
                500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            )
        for budget in budgets:
            allowed, healthy, desired, _expected = self.pdb_state(budget)
            if allowed <= 0:
                bname = budget["metadata"]["name"]
                raise ApiError(
                    429,
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    reason="TooManyRequests",
                    details={
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {bname} needs {desired} healthy pods "
                                f"and has {healthy} currently",
                            }
                        ]
                    },
                )
        options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
        self.delete(pods, ns, name, options, Request(req.manager or "eviction", req.dry_run))
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def pdb_state(self, budget: Dict[str, Any]) -> Tuple[int, int, int, int]:
        """(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods) of a PodDisruptionBudget."""
        ns = budget["metadata"].get("namespace", "")
        spec = budget.get("spec") or {}
        pods = [
            p
            for p in self.store.items(("", "pods"), ns)
            if selector_matches(spec.get("selector") or {}, p["metadata"].get("labels") or {})
            and not p["metadata"].get("deletionTimestamp")
        ]
        expected = len(pods)
        healthy = sum(1 for p in pods if _pod_ready(p))
        if "minAvailable" in spec:
            desired = _resolve_int_or_percent(spec["minAvailable"], expected, round_up=True)
        elif "maxUnavailable" in spec:
            desired = max(0, expected - _resolve_int_or_percent(spec["maxUnavailable"], expected, round_up=True))
        else:
            desired = expected
        return max(0, healthy - desired), healthy, desired, expected


# ---------------------------------------------------------------------- helpers


def _meta_policy(names: Tuple[str, ...]) -> Any:
    if names == ("metadata", "finalizers"):
        return "set"
    if names == ("metadata", "ownerReferences"):
        return ("uid",)
    return None


def _schema_by_names(schema: Optional[Dict[str, Any]], names: Tuple[str, ...]) -> Optional[Dict[str, Any]]:
    node = schema
    for name in names:
        while node is not None and node.get("type") == "array":
            node = node.get("items")
        if node is None:
            return None
        props = node.get("properties") or {}
        if name in props:
            node = props[name]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node


def _crd_id(crd: Dict[str, Any]) -> Tuple[Any, Any]:
    spec = crd.get("spec") or {}
    return spec.get("group"), (spec.get("names") or {}).get("plural")


def _strip_meta(obj: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for key in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
        meta.pop(key, None)
    return out


def _spec_of(obj: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _comparable(obj: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    meta.pop("resourceVersion", None)
    for entry in meta.get("managedFields") or []:
        entry.pop("time", None)
    if not meta.get("managedFields"):
        meta.pop("managedFields", None)
    for key in ("labels", "annotations", "finalizers", "ownerReferences"):
        if key in meta and not meta[key]:
            del meta[key]
    return out


def _scale_paths(rt: ResourceType) -> Tuple[str, str, str]:
    if rt.scale_paths:
        return (
            rt.scale_paths.get("specReplicasPath", ".spec.replicas"),
            rt.scale_paths.get("statusReplicasPath", ".status.replicas"),
            rt.scale_paths.get("labelSelectorPath", ""),
        )
    return ".spec.replicas", ".status.replicas", ".spec.selector"


def _dig(obj: Any, dotted: str) -> Any:
    node = obj
    for part in [p for p in dotted.split(".") if p]:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _set(obj: Dict[str, Any], dotted: str, value: Any) -> None:
    parts = [p for p in dotted.split(".") if p]
    node = obj
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _pod_ready(pod: Dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return status.get("phase") == "Running"


def _resolve_int_or_percent(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        raw = total * pct / 100.0
        return int(-(-raw // 1)) if round_up else int(raw)
    return int(value)
