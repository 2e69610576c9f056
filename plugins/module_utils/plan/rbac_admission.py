# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ValidatingAdmissionPolicies on the rollout identity's own requests (plan/rbac.py puts them in
the manifest): what RBAC cannot narrow, a create by name and a write by the object's content, in CEL.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.rbac_rules import ADMISSION_API, NAME, _meta


def match_expression(subject: Mapping[str, Any]) -> str:
    """The admission policies' matchCondition: the requests of this subject, and nobody else's."""
    if subject["kind"] == "ServiceAccount":
        return f"request.userInfo.username == 'system:serviceaccount:{subject['namespace']}:{subject['name']}'"
    if subject["kind"] == "Group":
        return f"has(request.userInfo.groups) && '{subject['name']}' in request.userInfo.groups"
    return f"request.userInfo.username == '{subject['name']}'"


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


def _jobs_policy(inputs: Mapping[str, Any], match: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The policy on validate's NCCL Jobs (and its binding)."""
    # validate's NCCL Jobs: in validate_namespace only (the policy matches the subject's Jobs in every
    # namespace and refuses them elsewhere, whatever RBAC grants there), the planned image
    # (validate_nccl_image), no other container, the planned securityContext (IPC_LOCK added, nothing
    # privileged), the Pod on the default ServiceAccount without host namespaces, and only Secret,
    # ConfigMap and emptyDir volumes (no hostPath, no claim).
    return _policy(
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


def _kinds_policy(inputs: Mapping[str, Any], match: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The policy on the kinds this identity writes without names (and its binding)."""
    # What this identity writes by name-less RBAC, narrowed by content: CRDs it creates are the
    # collection's (``crds``); PersistentVolumes are CSI volumes of the collection's drivers (never
    # hostPath or local) and StorageClasses provision with them; namespaces it creates carry no Pod
    # Security label; its Secrets are never ServiceAccount tokens; its Services are ClusterIP without
    # external IPs.
    return _policy(
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


def _owned_policy(inputs: Mapping[str, Any], match: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The policy that keeps this identity to the objects it made (and its binding)."""
    # Ownership: this identity changes or deletes only what it made. StorageClasses, volumes and
    # claims, the DRA DeviceClasses and claim templates (never the drivers' own DeviceClasses), the
    # NCCL ConfigMaps, the NFS mount-options Secrets and validate's Secrets carry the
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
        _rules("resource.k8s.io", ["deviceclasses", "resourceclaimtemplates"], ["CREATE", "UPDATE", "DELETE"]),
    ]
    return _policy(
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


def admission_policies(inputs: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Three ValidatingAdmissionPolicies with their bindings (admissionregistration.k8s.io/v1,
    Kubernetes 1.30 and later) on the subject's own requests: they narrow what RBAC cannot (a create
    by name, a write by the object's content). Not for the identity to apply: it may not write
    admission policies."""
    match = [{"name": NAME, "expression": match_expression(inputs["subject"])}]
    return _jobs_policy(inputs, match) + _kinds_policy(inputs, match) + _owned_policy(inputs, match)
