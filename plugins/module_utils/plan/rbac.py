# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The least-privilege RBAC of the identity the cluster roles run as, rendered for a plan.

``manifest(inputs)`` returns the ``kind: List`` an administrator applies: the cluster-wide
ClusterRole and its binding, the operators' namespaces with a Role for each Helm release, the
namespaced grants (NCCL ConfigMaps, storage claims, validate's Jobs, the NFS mount-options
Secrets) bound by RoleBindings in the namespaces the plan names only, and the
ValidatingAdmissionPolicies on the identity's own requests. ``inputs`` is the small explicit dict
``DEFAULT_INPUTS`` shows; ``inputs_from_intent`` computes it from the checked variables (the cluster
intent and each GPU node's ``gpufabric_storage``). The rules are kept here, and only here:
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
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _network_objects
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _storage_csi

NAME = "gpufabric-rollout"
PART_OF = {"app.kubernetes.io/part-of": NAME}
RBAC_API = "rbac.authorization.k8s.io"
ADMISSION_API = "admissionregistration.k8s.io/v1"
SUBJECT_KINDS = ("User", "Group", "ServiceAccount")
# Namespaces every cluster has: bound in, never made here.
BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ALL_VERBS = ["get", "list", "create", "patch", "delete"]

# The CRDs the collection installs (network_operator_crds_dir: the network kinds the plan emits;
# gpu_operator_crds_dir: the GPU Operator's two, plan/gpu_operator.py): the only ones the ClusterRole
# lets the identity patch (resourceNames) and the gpufabric-rollout-kinds policy lets it create.
GPU_OPERATOR_CRDS = ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com")
COLLECTION_CRDS = tuple(_network_objects.CRD_NAMES.values()) + GPU_OPERATOR_CRDS

# What must be cluster-wide (ClusterRole gpufabric-rollout). The patch of CRDs by name follows the
# first rule (``manifest``: the names come from the inputs).
CLUSTER_RULES: Tuple[Dict[str, Any], ...] = (
    # The CRDs the collection installs: read, created, and patched by name only. RBAC cannot narrow
    # `create` by name (the gpufabric-rollout-kinds admission policy admits only those names); every
    # role waits for its CRDs to be Established (get).
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "create"]},
    # Node labels (network_operator, gpu_operator, rdma_networks, storage_csi); cordon, uncordon and
    # the maintenance annotations (node_maintenance); the upgrade's plan lists the Nodes to find
    # those a failed run left cordoned.
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    # The namespaces of pools, NADs and NCCL ConfigMaps (rdma_networks), of the storage claims
    # (storage_csi), and the operator's (Helm's --create-namespace, network_operator): read, and
    # created when missing; never patched (an existing namespace is left as it is). The
    # gpufabric-rollout-kinds policy refuses Pod Security labels on a namespace this identity creates.
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "create"]},
    # The drain (node_maintenance): the node's Pods in every namespace (RBAC cannot narrow a list by
    # field selector), evicted through the eviction API, which honours PodDisruptionBudgets; then
    # watched until gone; the budgets read to name what blocks.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    # NicClusterPolicy / NicNodePolicies (network_operator). Every kind below is also listed by the
    # labels of what the collection made, and deleted when it left the plan (pruning).
    {"apiGroups": ["mellanox.com"], "resources": ["nicclusterpolicies", "nicnodepolicies"], "verbs": ALL_VERBS},
    # Per-rail IP pools (rdma_networks, nv-ipam).
    {"apiGroups": ["nv-ipam.nvidia.com"], "resources": ["ippools", "cidrpools"], "verbs": ALL_VERBS},
    # Per-rail NetworkAttachmentDefinitions (rdma_networks).
    {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["network-attachment-definitions"], "verbs": ALL_VERBS},
    # The ClusterPolicy the GPU Operator chart renders (Helm, gpu_operator) and the NVIDIADrivers the
    # role applies, lists by its label and prunes.
    {"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": ["nvidia.com"], "resources": ["nvidiadrivers"], "verbs": ALL_VERBS},
    # The SR-IOV path (sriov_networks).
    {
        "apiGroups": ["sriovnetwork.openshift.io"],
        "resources": ["sriovnetworknodepolicies", "sriovnetworks", "sriovnetworkpoolconfigs"],
        "verbs": ALL_VERBS,
    },
    # The filesystems' StorageClasses and static PersistentVolumes, and the IBM Storage Scale
    # CSIScaleOperator (storage_csi), listed by their labels and deleted when they left the plan.
    # Their names come from gpufabric_storage, so RBAC names none of them: the
    # gpufabric-rollout-owned policy admits writes and deletes by this identity only on objects that
    # carry the collection's label, and gpufabric-rollout-kinds only CSI volumes and StorageClasses of
    # the collection's drivers (no hostPath). The CSI drivers themselves are installed by an
    # administrator (storage_csi_install_drivers: false).
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ALL_VERBS},
    {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ALL_VERBS},
    {"apiGroups": ["csi.ibm.com"], "resources": ["csiscaleoperators"], "verbs": ALL_VERBS},
)

# The Helm release of each operator chart, in the operator's namespace only: Helm keeps each
# release revision in a Secret there; and the namespaced objects of the chart as the lab's stand-in
# charts have them (network_operator: a ServiceAccount, a ConfigMap, the operator's Deployment;
# gpu_operator: two ServiceAccounts and the operator's Deployment, its ClusterPolicy and NVIDIADriver
# granted cluster-wide). The real charts install more, cluster-scoped RBAC among it, which
# Kubernetes lets only an identity create that holds every permission it grants (or
# `bind`/`escalate`), in practice an administrator: see docs/rbac/README.md.
_HELM_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "update", "delete"]}
_CHART_VERBS = ["get", "create", "patch", "delete"]
HELM_RULES: Dict[str, Tuple[Dict[str, Any], ...]] = {
    "network_operator": (
        _HELM_SECRETS,
        {"apiGroups": [""], "resources": ["serviceaccounts", "configmaps"], "verbs": _CHART_VERBS},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _CHART_VERBS},
    ),
    "gpu_operator": (
        _HELM_SECRETS,
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": _CHART_VERBS},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _CHART_VERBS},
        # Readiness read-back of the operands when the ClusterPolicy is not ready.
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list"]},
    ),
}
# NCCL across the nodes in Pods (validate): one Job per node group with its headless Service and the
# Secret of the run's SSH key pair, applied, read (where the Pods ran, the launcher Pod's log) and
# deleted, in validate_namespace only: a namespace of their own, apart from the NADs' (the Pods
# attach the NADs across namespaces and carry the NCCL environment inline, proof/jobs.py).
VALIDATE_RULES: Tuple[Dict[str, Any], ...] = (
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
)
# The StorageClasses' mount-options Secrets (storage_csi), which the NFS driver reads when it
# deletes a volume, listed by their labels in these namespaces only and deleted when they left the plan.
STORAGE_RULES: Tuple[Dict[str, Any], ...] = ({"apiGroups": [""], "resources": ["secrets"], "verbs": ALL_VERBS},)
# The NCCL environment ConfigMaps per node group (rdma_networks), in the NADs' namespace; listed by
# their labels there only, and deleted when they left the plan. A ClusterRole bound by a
# RoleBinding in that namespace only (never cluster-wide).
NETWORKS_RULES: Tuple[Dict[str, Any], ...] = ({"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_VERBS},)
# The static volumes' claims (storage_csi), in the namespaces gpufabric_storage names for them;
# listed by their labels there only, and deleted when they left the plan and no Pod uses them.
CLAIMS_RULES: Tuple[Dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ALL_VERBS},
)

# The default plan: the namespaces every role uses unless the inventory names others.
DEFAULT_INPUTS: Dict[str, Any] = {
    "subject": {"kind": "User", "name": NAME},
    "operator_namespaces": {"network_operator": "nvidia-network-operator", "gpu_operator": "gpu-operator"},
    "nad_namespaces": ["default"],
    "validate_namespaces": ["gpufabric-validation"],
    "secret_namespaces": ["csi-driver-nfs"],
    "claim_namespaces": [_storage_csi.CLAIM_NAMESPACE],
    "crds": list(COLLECTION_CRDS),
    # validate_nccl_image (roles/validate/defaults/main.yml); None: the caller must give it
    "job_image": None,
}

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
        role: str(cluster.get(f"{role}_namespace") or DEFAULT_INPUTS["operator_namespaces"][role])
        for role in HELM_RULES
        if role in roles
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


# --------------------------------------------------------------------------------------------- manifest
def _meta(name: str, namespace: Optional[str] = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(PART_OF)
    return meta


def _subject(subject: Mapping[str, Any]) -> Dict[str, Any]:
    if subject["kind"] == "ServiceAccount":
        return {"kind": "ServiceAccount", "name": subject["name"], "namespace": subject["namespace"]}
    return {"apiGroup": RBAC_API, "kind": subject["kind"], "name": subject["name"]}


def match_expression(subject: Mapping[str, Any]) -> str:
    """The admission policies' matchCondition: the requests of this subject, and nobody else's."""
    if subject["kind"] == "ServiceAccount":
        return f"request.userInfo.username == 'system:serviceaccount:{subject['namespace']}:{subject['name']}'"
    if subject["kind"] == "Group":
        return f"has(request.userInfo.groups) && '{subject['name']}' in request.userInfo.groups"
    return f"request.userInfo.username == '{subject['name']}'"


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


def _cel_list(values: Sequence[str], per_line: int = 3) -> str:
    """A CEL list literal of strings, a few per line."""
    quoted = [f"'{v}'" for v in values]
    lines = [", ".join(quoted[i : i + per_line]) for i in range(0, len(quoted), per_line)]
    return "[" + "".join(f"\n  {line}," for line in lines)[:-1] + "]" if len(lines) > 1 else "[" + "".join(lines) + "]"


def _policy(name: str, spec: Dict[str, Any]) -> List[Dict[str, Any]]:
    spec = {"failurePolicy": "Fail", **spec}
    return [
        {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": _meta(name), "spec": spec},
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": _meta(name),
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]


def _rules(group: str, resources: Sequence[str], operations: Sequence[str]) -> Dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": ["*"], "operations": list(operations), "resources": list(resources)}


def _labelled(obj: str) -> str:
    """CEL: ``obj`` (object or oldObject) carries the collection's labels."""
    return (
        f"(has({obj}.metadata.labels) &&\n"
        f"(({obj}.metadata.labels.exists(k, k == 'app.kubernetes.io/managed-by') &&\n"
        f"  {obj}.metadata.labels['app.kubernetes.io/managed-by'] == 'gpufabric.rollout') ||\n"
        f" ({obj}.metadata.labels.exists(k, k == 'app.kubernetes.io/part-of') &&\n"
        f"  {obj}.metadata.labels['app.kubernetes.io/part-of'] == 'gpufabric-rollout')))"
    )


def admission_policies(inputs: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Three ValidatingAdmissionPolicies with their bindings (admissionregistration.k8s.io/v1,
    Kubernetes 1.30 and later) on the subject's own requests: they narrow what RBAC cannot (a create
    by name, a write by the object's content). Not for the identity to apply: it may not write
    admission policies."""
    match = [{"name": NAME, "expression": match_expression(inputs["subject"])}]
    out: List[Dict[str, Any]] = []
    # validate's NCCL Jobs: in validate_namespace only (the policy matches the subject's Jobs in every
    # namespace and refuses them elsewhere, whatever RBAC grants there), the planned image
    # (validate_nccl_image), no other container, the planned securityContext (IPC_LOCK added, nothing
    # privileged), the Pod on the default ServiceAccount without host namespaces, and only Secret,
    # ConfigMap and emptyDir volumes (no hostPath, no claim).
    out += _policy(
        f"{NAME}-jobs",
        {
            "matchConstraints": {"resourceRules": [_rules("batch", ["jobs"], ["CREATE", "UPDATE"])]},
            "matchConditions": copy.deepcopy(match),
            "variables": [{"name": "pod", "expression": "object.spec.template.spec"}],
            "validations": [
                {
                    "expression": "request.namespace in " + _cel_list(inputs["validate_namespaces"]),
                    "message": "the NCCL Jobs run in validate_namespace only",
                },
                {
                    "expression": f"variables.pod.containers.all(c, c.image == '{inputs['job_image']}')",
                    "message": "the NCCL Job's containers must run the planned image",
                },
                {
                    "expression": "!has(variables.pod.initContainers) && !has(variables.pod.ephemeralContainers)",
                    "message": "the NCCL Job has no init or ephemeral containers",
                },
                {
                    "expression": "variables.pod.containers.all(c, !has(c.securityContext) ||\n"
                    "  ((!has(c.securityContext.privileged) || !c.securityContext.privileged) &&\n"
                    "   (!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) ||\n"
                    "    c.securityContext.capabilities.add.all(cap, cap == 'IPC_LOCK'))))",
                    "message": "the NCCL Job's containers may add IPC_LOCK only and may not be privileged",
                },
                {
                    "expression": "!(has(variables.pod.hostNetwork) && variables.pod.hostNetwork) &&\n"
                    "!(has(variables.pod.hostPID) && variables.pod.hostPID) &&\n"
                    "!(has(variables.pod.hostIPC) && variables.pod.hostIPC)",
                    "message": "the NCCL Job may not use the node's network, PID or IPC namespace",
                },
                {
                    "expression": "!has(variables.pod.volumes) ||\n"
                    "variables.pod.volumes.all(v, has(v.secret) || has(v.configMap) || has(v.emptyDir))",
                    "message": "the NCCL Job may mount Secret, ConfigMap and emptyDir volumes only (no hostPath, "
                    "no claim)",
                },
                {
                    "expression": "(!has(variables.pod.serviceAccountName) || "
                    "variables.pod.serviceAccountName == 'default') &&\n"
                    "(!has(variables.pod.serviceAccount) || variables.pod.serviceAccount == 'default')",
                    "message": "the NCCL Job runs as the namespace's default ServiceAccount",
                },
            ],
        },
    )
    # What this identity writes by name-less RBAC, narrowed by content: CRDs it creates are the
    # collection's (``crds``); PersistentVolumes are CSI volumes of the collection's drivers (never
    # hostPath or local) and StorageClasses provision with them; namespaces it creates carry no Pod
    # Security label; its Secrets are never ServiceAccount tokens; its Services are ClusterIP without
    # external IPs.
    out += _policy(
        f"{NAME}-kinds",
        {
            "matchConstraints": {
                "resourceRules": [
                    _rules("apiextensions.k8s.io", ["customresourcedefinitions"], ["CREATE", "UPDATE"]),
                    _rules("", ["persistentvolumes", "namespaces", "secrets", "services"], ["CREATE", "UPDATE"]),
                    _rules("storage.k8s.io", ["storageclasses"], ["CREATE", "UPDATE"]),
                ]
            },
            "matchConditions": copy.deepcopy(match),
            "variables": [
                {"name": "kind", "expression": "request.resource.resource"},
                {"name": "drivers", "expression": _cel_list(list(_storage_csi.DRIVER_NAMES.values()), 5)},
            ],
            "validations": [
                {
                    "expression": "variables.kind != 'customresourcedefinitions' || object.metadata.name in "
                    + _cel_list(inputs["crds"], 2),
                    "message": "this identity installs the collection's CRDs only",
                },
                {
                    "expression": "variables.kind != 'persistentvolumes' ||\n"
                    "(has(object.spec.csi) && object.spec.csi.driver in variables.drivers)",
                    "message": "this identity makes CSI volumes of the collection's drivers only (no hostPath or "
                    "local volume)",
                },
                {
                    "expression": "variables.kind != 'storageclasses' || object.provisioner in variables.drivers",
                    "message": "this identity makes StorageClasses of the collection's CSI drivers only",
                },
                {
                    "expression": "variables.kind != 'namespaces' || !has(object.metadata.labels) ||\n"
                    "object.metadata.labels.all(k, !k.startsWith('pod-security.kubernetes.io/'))",
                    "message": "this identity sets no Pod Security label on a namespace",
                },
                {
                    "expression": "variables.kind != 'secrets' || !has(object.type) ||\n"
                    "object.type != 'kubernetes.io/service-account-token'",
                    "message": "this identity makes no ServiceAccount token Secret",
                },
                {
                    "expression": "variables.kind != 'services' ||\n"
                    "((!has(object.spec.type) || object.spec.type == 'ClusterIP') && !has(object.spec.externalIPs))",
                    "message": "this identity makes ClusterIP Services without external IPs only",
                },
            ],
        },
    )
    # Ownership: this identity changes or deletes only what it made. StorageClasses, volumes and
    # claims, the NCCL ConfigMaps, the NFS mount-options Secrets and validate's Secrets carry the
    # collection's labels (app.kubernetes.io/managed-by: gpufabric.rollout, or validate's
    # app.kubernetes.io/part-of: gpufabric-rollout); an object without them is neither updated nor
    # deleted, and one is not created without them. The operators' namespaces, where Helm keeps its
    # own release records and chart objects, are left out.
    constraints: Dict[str, Any] = {}
    operator_namespaces = list(inputs["operator_namespaces"].values())
    if operator_namespaces:
        constraints["namespaceSelector"] = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": operator_namespaces}
            ]
        }
    constraints["resourceRules"] = [
        _rules(
            "", ["configmaps", "secrets", "persistentvolumes", "persistentvolumeclaims"], ["CREATE", "UPDATE", "DELETE"]
        ),
        _rules("storage.k8s.io", ["storageclasses"], ["CREATE", "UPDATE", "DELETE"]),
    ]
    out += _policy(
        f"{NAME}-owned",
        {
            "matchConstraints": constraints,
            "matchConditions": copy.deepcopy(match),
            "variables": [
                {"name": "before", "expression": "request.operation == 'CREATE' ||\n" + _labelled("oldObject")},
                {"name": "after", "expression": "request.operation == 'DELETE' ||\n" + _labelled("object")},
            ],
            "validations": [
                {
                    "expression": "variables.before && variables.after",
                    "message": "this identity changes and deletes only the objects that carry the collection's labels",
                }
            ],
        },
    )
    return out


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
