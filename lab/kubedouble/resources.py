"""Resource types: the built-in kinds the collection touches, and kinds registered by CRDs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: List[str] = field(default_factory=list)
    subresources: Tuple[str, ...] = ()  # "status", "scale", "eviction"
    categories: List[str] = field(default_factory=list)
    has_generation: bool = False
    schema: Optional[Dict[str, Any]] = None  # openAPIV3Schema of a custom resource
    custom: bool = False
    crd_name: str = ""
    scale_paths: Optional[Dict[str, str]] = None  # CRD scale subresource paths
    # Go structs the real server always serialises, even when empty ("spec": {}): typed
    # clients (kubernetes.core's k8s_drain reads node.spec.unschedulable) rely on them.
    structs: Tuple[str, ...] = ()
    zero_status: Dict[str, Any] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    def discovery(self) -> List[Dict[str, Any]]:
        """The APIResource entries of this type and its subresources."""
        main: Dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular or self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(ALL_VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        out = [main]
        for sub in self.subresources:
            if sub == "status":
                out.append(
                    {
                        "name": f"{self.plural}/status",
                        "singularName": "",
                        "namespaced": self.namespaced,
                        "kind": self.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "scale":
                entry = {
                    "name": f"{self.plural}/scale",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
                if not self.custom:
                    entry.update({"group": "autoscaling", "version": "v1"})
                else:
                    entry.update({"group": "autoscaling", "version": "v1"})
                out.append(entry)
            elif sub == "eviction":
                out.append(
                    {
                        "name": f"{self.plural}/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
        return out


def _t(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: Iterable[str] = (),
    sub: Tuple[str, ...] = (),
    gen: bool = False,
    cats: Iterable[str] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=list(short),
        subresources=sub,
        has_generation=gen,
        categories=list(cats),
    )


ALL = ("all",)

BUILTIN: List[ResourceType] = [
    _t("", "v1", "namespaces", "Namespace", False, ["ns"], ("status",)),
    _t("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    _t("", "v1", "secrets", "Secret"),
    _t("", "v1", "services", "Service", True, ["svc"], ("status",), cats=ALL),
    _t("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    _t("", "v1", "endpoints", "Endpoints", True, ["ep"]),
    _t("", "v1", "nodes", "Node", False, ["no"], ("status",)),
    _t("", "v1", "pods", "Pod", True, ["po"], ("status", "eviction"), cats=ALL),
    _t("", "v1", "events", "Event", True, ["ev"]),
    _t("", "v1", "persistentvolumes", "PersistentVolume", False, ["pv"], ("status",)),
    _t("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"], ("status",)),
    _t("", "v1", "resourcequotas", "ResourceQuota", True, ["quota"], ("status",)),
    _t("", "v1", "limitranges", "LimitRange", True, ["limits"]),
    _t("apps", "v1", "deployments", "Deployment", True, ["deploy"], ("status", "scale"), True, ALL),
    _t("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], ("status",), True, ALL),
    _t("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], ("status", "scale"), True, ALL),
    _t("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], ("status", "scale"), True, ALL),
    _t("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _t("batch", "v1", "jobs", "Job", True, [], ("status",), True, ALL),
    _t("batch", "v1", "cronjobs", "CronJob", True, ["cj"], ("status",), True, ALL),
    _t("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"], ("status",), True),
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ["sc"]),
    _t("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _t("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _t("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, [], ("status",)),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _t(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ["crd", "crds"],
        ("status",),
        True,
    ),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("events.k8s.io", "v1", "events", "Event", True, ["ev"]),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    _t("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
    _t(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
    ),
    _t("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
]

# Strategic-merge-patch merge keys of the built-in kinds (k8s.io/api `patchMergeKey` tags), by
# field name. Lists not named here are atomic (replaced as a whole), as are all lists of custom
# resources unless their schema says `x-kubernetes-list-type: map`.
MERGE_KEYS: Dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "secrets": "name",
}
# Lists of scalars merged as sets (patchStrategy "merge" on a primitive list).
MERGE_SETS = {"finalizers"}


def list_merge_key(field_name: str, items: List[Any]) -> Optional[str]:
    """Merge key for a built-in list field; `ports` is keyed by containerPort or port."""
    if field_name == "ports":
        for item in items:
            if isinstance(item, dict) and "containerPort" in item:
                return "containerPort"
        return "port"
    return MERGE_KEYS.get(field_name)


SPEC_STATUS = ("spec", "status")
STRUCTS = {
    ("", "namespaces"): SPEC_STATUS,
    ("", "nodes"): SPEC_STATUS,
    ("", "pods"): SPEC_STATUS,
    ("", "services"): SPEC_STATUS,
    ("", "persistentvolumes"): SPEC_STATUS,
    ("", "persistentvolumeclaims"): SPEC_STATUS,
    ("", "resourcequotas"): SPEC_STATUS,
    ("", "limitranges"): ("spec",),
    ("apps", "deployments"): SPEC_STATUS,
    ("apps", "daemonsets"): SPEC_STATUS,
    ("apps", "statefulsets"): SPEC_STATUS,
    ("apps", "replicasets"): SPEC_STATUS,
    ("batch", "jobs"): SPEC_STATUS,
    ("batch", "cronjobs"): SPEC_STATUS,
    ("policy", "poddisruptionbudgets"): SPEC_STATUS,
    ("coordination.k8s.io", "leases"): ("spec",),
    ("networking.k8s.io", "networkpolicies"): ("spec",),
    ("storage.k8s.io", "csidrivers"): ("spec",),
    ("storage.k8s.io", "csinodes"): ("spec",),
    ("storage.k8s.io", "volumeattachments"): SPEC_STATUS,
    ("apiextensions.k8s.io", "customresourcedefinitions"): SPEC_STATUS,
}
# The zero value of status structs whose Go fields lack `omitempty`: the real server emits them
# (e.g. a new DaemonSet has "numberReady": 0), and strict clients require them.
ZERO_STATUS: Dict[Tuple[str, str], Dict[str, Any]] = {
    ("apps", "daemonsets"): {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    ("apps", "statefulsets"): {"replicas": 0, "availableReplicas": 0},
    ("apps", "replicasets"): {"replicas": 0},
    ("policy", "poddisruptionbudgets"): {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
    ("", "services"): {"loadBalancer": {}},
}
for _rt in BUILTIN:
    _rt.structs = STRUCTS.get((_rt.group, _rt.plural), ())
    _rt.zero_status = ZERO_STATUS.get((_rt.group, _rt.plural), {})


class Registry:
    """Resource types by (group, version, plural) and by (apiVersion, kind)."""

    def __init__(self) -> None:
        self.types: Dict[Tuple[str, str, str], ResourceType] = {}
        for rt in BUILTIN:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self.types[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> List[ResourceType]:
        gone = [rt for rt in self.types.values() if rt.custom and rt.crd_name == crd_name]
        for rt in gone:
            del self.types[(rt.group, rt.version, rt.plural)]
        return gone

    def get(self, group: str, version: str, plural: str) -> Optional[ResourceType]:
        return self.types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> Optional[ResourceType]:
        for rt in self.types.values():
            if rt.api_version == api_version and rt.kind == kind:
                return rt
        return None

    def group_versions(self) -> Dict[str, List[str]]:
        """group -> versions (preferred first); the core group is ''."""
        out: Dict[str, List[str]] = {}
        for rt in self.types.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for group, versions in out.items():
            versions.sort(key=_version_priority)
            out[group] = versions
        return out

    def in_group_version(self, group: str, version: str) -> List[ResourceType]:
        return [rt for rt in self.types.values() if rt.group == group and rt.version == version]

    def storage_types(self, group: str, plural: str) -> List[ResourceType]:
        return [rt for rt in self.types.values() if rt.group == group and rt.plural == plural]


def _version_priority(version: str) -> Tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re

    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)


def crd_types(crd: Dict[str, Any]) -> List[ResourceType]:
    """Resource types a CustomResourceDefinition (apiextensions.k8s.io/v1) serves."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for ver in spec.get("versions") or []:
        if not ver.get("served", True):
            continue
        subs = ver.get("subresources") or {}
        sub: Tuple[str, ...] = tuple(s for s in ("status", "scale") if s in subs)
        scale = subs.get("scale")
        out.append(
            ResourceType(
                group=spec.get("group", ""),
                version=ver.get("name", ""),
                plural=names.get("plural", ""),
                kind=names.get("kind", ""),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or names.get("kind", "").lower(),
                short_names=list(names.get("shortNames") or []),
                categories=list(names.get("categories") or []),
                subresources=sub,
                has_generation=True,
                schema=(ver.get("schema") or {}).get("openAPIV3Schema"),
                custom=True,
                crd_name=(crd.get("metadata") or {}).get("name", ""),
                scale_paths=scale if isinstance(scale, dict) else None,
            )
        )
    return out
