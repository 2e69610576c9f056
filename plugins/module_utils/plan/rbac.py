# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The least-privilege RBAC of the identity the cluster roles run as, rendered for a plan.

``manifest(inputs)`` returns the ``kind: List`` an administrator applies: the cluster-wide
ClusterRole and its binding, the operators' namespaces with a Role for each Helm release, the
namespaced grants (NCCL ConfigMaps, storage claims, validate's Jobs, the NFS mount-options
Secrets) bound by RoleBindings in the namespaces the plan names only, and the
ValidatingAdmissionPolicies on the identity's own requests. ``inputs`` is the small explicit dict
``DEFAULT_INPUTS`` shows; ``inputs_from_intent`` computes it from the checked variables (the cluster
intent and each GPU node's ``gpufabric_storage``). The rules are kept in ``plan.rbac_rules``, and only
there, the admission policies in ``plan.rbac_admission``:
docs/rbac/gpufabric-rollout.yaml is ``manifest`` of the default plan (tests/unit/cluster/test_rbac.py
keeps it so), ``apply.k8s_access`` reads the cluster-wide rules from ``CLUSTER_RULES``, and
docs/rbac/README.md says which role needs what.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.storage import storage_pods
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.rbac_admission import admission_policies
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.rbac_rules import (
    BUILTIN_NAMESPACES,
    CLAIMS_RULES,
    CLUSTER_RULES,
    COLLECTION_CRDS,
    DEFAULT_INPUTS,
    HELM_NAMESPACE_VARS,
    HELM_ROLES,
    HELM_RULES,
    NAME,
    NETWORKS_RULES,
    RBAC_API,
    STORAGE_RULES,
    SUBJECT_KINDS,
    VALIDATE_RULES,
    _meta,
)

# A Kubernetes user or group name as a client certificate or an authenticator gives it; no quote
# or backslash (it goes into the admission policies' CEL expressions as a string literal).
_USER_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._:@-]{0,251}[A-Za-z0-9])?")
_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IMAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")


class RbacError(ValueError):
    """Inputs the manifest cannot be rendered from; ``problems`` names each, with its variable."""

    def __init__(self, problems: List[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


# --------------------------------------------------------------------------------------------- inputs
def check_subject(kind: Any, name: Any, namespace: Any = None, names: Optional[Mapping[str, str]] = None) -> List[str]:
    """The problems of a subject; ``names`` maps kind/name/namespace to the variables they came from."""
    names = {"kind": "kind", "name": "name", "namespace": "namespace", **(names or {})}
    if kind not in SUBJECT_KINDS:
        return [f"{names['kind']}: {kind!r} is not one of {', '.join(SUBJECT_KINDS)}"]
    problems = []
    if kind == "ServiceAccount":
        if not (isinstance(name, str) and len(name) <= 253 and _DNS_SUBDOMAIN_RE.fullmatch(name)):
            problems.append(
                f"{names['name']}: {name!r} is not a ServiceAccount name (a DNS subdomain: lower-case letters, "
                "digits, '-' and '.', at most 253 characters)"
            )
        if not (isinstance(namespace, str) and _DNS_LABEL_RE.fullmatch(namespace)):
            problems.append(
                f"{names['namespace']}: {namespace!r} is not a namespace (a DNS label: lower-case letters, digits "
                "and '-', at most 63 characters); a ServiceAccount subject needs its namespace"
            )
    elif not (isinstance(name, str) and _USER_RE.fullmatch(name)):
        problems.append(
            f"{names['name']}: {name!r} is not a {kind} name this manifest can bind (letters, digits, '.', '_', "
            "':', '@' and '-', starting and ending with a letter or digit, at most 253 characters)"
        )
    elif namespace:
        problems.append(f"{names['namespace']}: a {kind} has no namespace; set it for a ServiceAccount only")
    return problems


def _check_inputs(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    unknown = sorted(set(inputs) - set(DEFAULT_INPUTS))
    problems = [f"{key}: not an input of the RBAC manifest (known: {', '.join(DEFAULT_INPUTS)})" for key in unknown]
    merged = {**copy.deepcopy(DEFAULT_INPUTS), **copy.deepcopy(dict(inputs))}
    subject = merged["subject"]
    if not isinstance(subject, Mapping):
        problems.append(f"subject: {subject!r} is not a mapping of kind, name and (ServiceAccount) namespace")
    else:
        problems += check_subject(
            subject.get("kind"),
            subject.get("name"),
            subject.get("namespace"),
            {"kind": "subject.kind", "name": "subject.name", "namespace": "subject.namespace"},
        )
    operators = merged["operator_namespaces"]
    if not isinstance(operators, Mapping) or set(operators) - set(HELM_RULES):
        problems.append(f"operator_namespaces: {operators!r} maps none but {' and '.join(HELM_RULES)} to a namespace")
        operators = {}
    for role, namespace in operators.items():
        if not (isinstance(namespace, str) and _DNS_LABEL_RE.fullmatch(namespace)):
            problems.append(f"operator_namespaces.{role}: {namespace!r} is not a namespace (a DNS label)")
    for key in ("nad_namespaces", "validate_namespaces", "secret_namespaces", "claim_namespaces"):
        value = merged[key]
        if not isinstance(value, (list, tuple)):
            problems.append(f"{key}: {value!r} is not a list of namespaces")
            continue
        for namespace in value:
            if not (isinstance(namespace, str) and _DNS_LABEL_RE.fullmatch(namespace)):
                named = " (validate_namespace)" if key == "validate_namespaces" else ""
                problems.append(f"{key}: {namespace!r} is not a namespace (a DNS label){named}")
        merged[key] = sorted(set(value), key=lambda n: (n != "default", str(n)))
    crds = merged["crds"]
    if not isinstance(crds, (list, tuple)) or not all(
        isinstance(c, str) and c.count(".") >= 2 and _DNS_SUBDOMAIN_RE.fullmatch(c) for c in crds
    ):
        problems.append(f"crds: {crds!r} is not a list of CRD names (plural.group)")
    image = merged["job_image"]
    if not (isinstance(image, str) and _IMAGE_RE.fullmatch(image)):
        problems.append(f"job_image: {image!r} is not an image reference (validate_nccl_image)")
    if problems:
        raise RbacError(problems)
    return merged


def inputs_from_intent(
    cluster: Mapping[str, Any],
    filesystems: Sequence[Mapping[str, Any]],
    subject: Mapping[str, Any],
    job_image: str,
    validate_namespace: str,
) -> Dict[str, Any]:
    """The inputs of ``manifest`` for a plan: ``cluster`` is the checked cluster intent (the plan's
    check_cluster), ``filesystems`` every GPU node's checked ``gpufabric_storage`` entries (one
    definition per name, as the cluster plan requires), ``job_image`` validate_nccl_image,
    ``validate_namespace`` the NCCL Jobs' namespace.

    The namespaces are those the roles write in: the NADs' (``gpufabric_rails.nad_namespace``), where
    rdma_networks keeps the NCCL ConfigMaps; validate's (``validate_namespace``), where it runs its
    Jobs, apart from the NADs' and the workloads'; each operator's release
    namespace, for the operators in ``plan_cluster_roles``; and for storage_csi, the claims' (the
    static volumes' ``k8s.namespace``, and "default", where it always lists) and the mount-options
    Secrets' (the NFS driver's namespace, and ``k8s.secret_namespace`` of an NFS StorageClass that
    names one), as its plan (``plan.storage_csi``) lists and prunes them."""
    roles = list(cluster.get("plan_cluster_roles") or [])
    nad = str((cluster.get("gpufabric_rails") or {}).get("nad_namespace") or "default")
    operators = {
        role: str(
            cluster.get(HELM_NAMESPACE_VARS.get(role, f"{role}_namespace"))
            or DEFAULT_INPUTS["operator_namespaces"][role]
        )
        for role in HELM_RULES
        if HELM_ROLES.get(role, role) in roles
        # dranet is installed in gpufabric_k8s_device_allocation dra mode only
        and (
            role != "dranet"
            or (
                cluster.get("gpufabric_k8s_device_allocation") == "dra"
                and cluster.get("network_operator_dranet_install", True)
            )
        )
    }
    secrets: List[str] = []
    claims: List[str] = []
    if "storage_csi" in roles:
        drivers = cluster.get("storage_csi_drivers") or {}
        nfs = str((drivers.get("nfs") or {}).get("namespace") or "")
        secrets = [nfs] if nfs else []
        claims = [_storage_csi.CLAIM_NAMESPACE]
        for fs in filesystems:
            k8s = fs.get("k8s") or {}
            pods = storage_pods(fs)
            if pods == "static_pv":
                claims.append(str(k8s.get("namespace") or _storage_csi.CLAIM_NAMESPACE))
            elif pods == "storageclass" and fs.get("backend") == "nfs" and not k8s.get("secret"):
                secrets.append(str(k8s.get("secret_namespace") or nfs))
    return {
        "subject": dict(subject),
        "operator_namespaces": operators,
        "nad_namespaces": [nad] if "rdma_networks" in roles else [],
        # validate runs its Jobs in a namespace of their own (proof/jobs.py)
        "validate_namespaces": [validate_namespace],
        "secret_namespaces": sorted(set(secrets)),
        "claim_namespaces": sorted(set(claims)),
        "crds": list(COLLECTION_CRDS),
        "job_image": job_image,
    }


def _subject(subject: Mapping[str, Any]) -> Dict[str, Any]:
    if subject["kind"] == "ServiceAccount":
        return {"kind": "ServiceAccount", "name": subject["name"], "namespace": subject["namespace"]}
    return {"apiGroup": RBAC_API, "kind": subject["kind"], "name": subject["name"]}


def _role(kind: str, name: str, namespace: Optional[str], rules: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": kind,
        "metadata": _meta(name, namespace),
        "rules": [copy.deepcopy(dict(r)) for r in rules],
    }


def _binding(kind: str, name: str, namespace: Optional[str], role_kind: str, subject: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": kind,
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": RBAC_API, "kind": role_kind, "name": name},
        "subjects": [dict(subject)],
    }


def manifest(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The RBAC of the inputs' subject for the inputs' namespaces, as one ``kind: List``. Raises
    RbacError naming every input that is wrong."""
    given = _check_inputs(inputs)
    subject = _subject(given["subject"])
    items: List[Dict[str, Any]] = []
    made = set(BUILTIN_NAMESPACES)

    def namespace(name: str) -> None:
        # made here, once, so that the Roles can be bound in it before the first run
        if name not in made:
            made.add(name)
            items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    cluster = _role("ClusterRole", NAME, None, CLUSTER_RULES)
    if given["crds"]:
        # never an empty resourceNames: that would be every CRD
        cluster["rules"].insert(
            1,
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": list(given["crds"]),
                "verbs": ["patch"],
            },
        )
    items += [cluster, _binding("ClusterRoleBinding", NAME, None, "ClusterRole", subject)]
    for role, ns in given["operator_namespaces"].items():
        namespace(ns)
        items += [
            _role("Role", f"{NAME}-helm", ns, HELM_RULES[role]),
            _binding("RoleBinding", f"{NAME}-helm", ns, "Role", subject),
        ]
    for ns in given["validate_namespaces"]:
        namespace(ns)
        items += [
            _role("Role", f"{NAME}-validate", ns, VALIDATE_RULES),
            _binding("RoleBinding", f"{NAME}-validate", ns, "Role", subject),
        ]
    for ns in given["secret_namespaces"]:
        namespace(ns)
        items += [
            _role("Role", f"{NAME}-storage", ns, STORAGE_RULES),
            _binding("RoleBinding", f"{NAME}-storage", ns, "Role", subject),
        ]
    for part, rules, key in (
        ("networks", NETWORKS_RULES, "nad_namespaces"),
        ("claims", CLAIMS_RULES, "claim_namespaces"),
    ):
        if not given[key]:
            continue
        items.append(_role("ClusterRole", f"{NAME}-{part}", None, rules))
        for ns in given[key]:
            namespace(ns)
            items.append(_binding("RoleBinding", f"{NAME}-{part}", ns, "ClusterRole", subject))
    items += admission_policies(given)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def cluster_rule_table() -> Dict[Tuple[str, str], Tuple[str, ...]]:
    """``CLUSTER_RULES`` as {(api group, resource): verbs}: what the ClusterRole grants on any object."""
    out: Dict[Tuple[str, str], Tuple[str, ...]] = {}
    for rule in CLUSTER_RULES:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out[(group, resource)] = tuple(rule["verbs"])
    return out
