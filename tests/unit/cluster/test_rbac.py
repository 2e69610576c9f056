"""Issue 37, point 2: the least-privilege RBAC rendered from a plan (plugins/module_utils/plan/rbac.py).
The shipped docs/rbac/gpufabric-rollout.yaml is its rendering for the default plan; a plan with
other namespaces gets its Roles and RoleBindings there and nothing more cluster-wide; the subject
(User, Group, ServiceAccount) is bound and matched by the admission policies; bad input is refused
naming the variable."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter import rbac as _filter
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _rbac

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "docs" / "rbac" / "gpufabric-rollout.yaml"
LAB = REPO / "lab" / "controlplane" / "rbac.yaml"
IMAGE = yaml.safe_load((REPO / "roles" / "validate" / "defaults" / "main.yml").read_text())["validate_nccl_image"]
# What no grant outside a namespace the plan names may write: cluster-wide, these stay read/create.
NAMESPACED_WRITES = {"configmaps", "persistentvolumeclaims", "secrets", "services", "pods"}
WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}
CUSTOM = {
    "job_image": IMAGE,
    "operator_namespaces": {"network_operator": "netop", "gpu_operator": "gpuop"},
    "nad_namespaces": ["ml-rails"],
    "validate_namespaces": ["ml-checks"],
    "secret_namespaces": ["nfs-secrets"],
    "claim_namespaces": ["default", "ml-data"],
}


def _split(text: str):
    """(the leading comment block, the rest)."""
    lines = text.splitlines(keepends=True)
    n = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    return "".join(lines[:n]), "".join(lines[n:])


def _items(manifest: Dict[str, Any], kind: str) -> List[Dict[str, Any]]:
    return [i for i in manifest["items"] if i["kind"] == kind]


def _bound(manifest: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """{namespace ('' for cluster-wide): the rules bound there}."""
    roles = {(i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"]): i for i in manifest["items"]}
    out: Dict[str, List[Dict[str, Any]]] = {}
    for b in manifest["items"]:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ns = b["metadata"].get("namespace", "")
        ref = b["roleRef"]
        role = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
        out.setdefault(ns, []).extend(role["rules"])
    return out


# ------------------------------------------------------------------------------------- the shipped file
def test_the_shipped_file_is_the_rendering_of_the_default_plan():
    header, body = _split(SHIPPED.read_text())
    assert "playbooks/rbac.yml" in header
    expected = _filter.rbac_yaml(_rbac.manifest({"job_image": IMAGE}))
    assert body == expected, (
        "docs/rbac/gpufabric-rollout.yaml drifted from plugins/module_utils/plan/rbac.py: render it again "
        "(its header, then gpufabric.rollout.rbac_yaml of manifest({'job_image': validate_nccl_image}))"
    )
    assert yaml.safe_load(body) == _rbac.manifest({"job_image": IMAGE})


def test_the_access_check_reads_the_generators_cluster_rules():
    role = _items(_rbac.manifest({"job_image": IMAGE}), "ClusterRole")[0]
    table = {}
    for rule in role["rules"]:
        if "resourceNames" not in rule:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    table[(group, resource)] = tuple(rule["verbs"])
    assert table == _k8s_access.SHIPPED_CLUSTER_RULES
    assert sorted(_rbac.COLLECTION_CRDS) == list(_k8s_access.COLLECTION_CRDS)


def test_the_lab_binds_what_the_generator_binds_for_the_labs_nad_namespace():
    """lab/controlplane/rbac.yaml binds gpufabric-rollout-networks in gpu-workloads (molecule cluster_layer's
    nad_namespace) beside the shipped file: the generator's own Namespace and RoleBinding for that plan."""

    def there(item):
        return "gpu-workloads" in (item["metadata"].get("namespace"), item["metadata"]["name"])

    lab = [i for i in yaml.safe_load(LAB.read_text())["items"] if there(i)]
    plan = _rbac.manifest({"job_image": IMAGE, "nad_namespaces": ["gpu-workloads"]})
    generated = [i for i in plan["items"] if there(i)]
    strip = [{**i, "metadata": {k: v for k, v in i["metadata"].items() if k != "labels"}} for i in generated]
    assert lab == strip


# ------------------------------------------------------------------------------------- custom namespaces
def test_custom_namespaces_get_their_roles_and_bindings_there():
    manifest = _rbac.manifest(CUSTOM)
    bound = _bound(manifest)
    grants = {
        ns: {(res, verb) for rule in rules for res in rule["resources"] for verb in rule["verbs"]}
        for ns, rules in bound.items()
    }
    assert ("configmaps", "create") in grants["ml-rails"]
    # validate's Jobs, Services and Secrets in their own namespace, not the NADs'
    assert {("jobs", "create"), ("services", "create"), ("secrets", "create")} <= grants["ml-checks"]
    assert not {grant[0] for grant in grants["ml-rails"]} & {"jobs", "services", "secrets", "pods", "pods/log"}
    assert ("persistentvolumeclaims", "delete") in grants["ml-data"]
    assert ("persistentvolumeclaims", "delete") in grants["default"]
    assert ("secrets", "patch") in grants["nfs-secrets"]
    assert ("secrets", "update") in grants["netop"] and ("daemonsets", "list") in grants["gpuop"]
    # nothing in the namespaces of the default plan that this plan does not name
    assert not {"nvidia-network-operator", "gpu-operator", "csi-driver-nfs"} & set(bound)
    assert ("configmaps", "create") not in grants["default"]
    # every namespace bound in and not built in is made, once, before its bindings
    made = [i["metadata"]["name"] for i in _items(manifest, "Namespace")]
    assert made == ["netop", "gpuop", "ml-checks", "nfs-secrets", "ml-rails", "ml-data"]
    for ns in made:
        first = next(n for n, i in enumerate(manifest["items"]) if i["metadata"].get("namespace") == ns)
        assert (
            manifest["items"].index(next(i for i in _items(manifest, "Namespace") if i["metadata"]["name"] == ns))
            < first
        )
    # the operators' namespaces, where Helm writes its records, are the ones the ownership policy leaves out
    owned = next(i for i in manifest["items"] if i["metadata"]["name"] == "gpufabric-rollout-owned")
    assert owned["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["netop", "gpuop"]


@pytest.mark.parametrize("inputs", [CUSTOM, {"job_image": IMAGE}, {**CUSTOM, "crds": []}])
def test_nothing_cluster_wide_writes_namespaced_objects_namespaces_or_crds_beyond_their_names(inputs):
    cluster = _bound(_rbac.manifest(inputs))[""]
    for rule in cluster:
        verbs = set(rule["verbs"])
        assert "*" not in verbs and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
        for resource in rule["resources"]:
            assert not (resource in NAMESPACED_WRITES and verbs & WRITES), rule
            if resource == "namespaces":
                assert verbs <= {"get", "create"}, rule
            if resource == "customresourcedefinitions":
                assert verbs <= {"get", "create"} or (rule.get("resourceNames") and verbs == {"patch"}), rule
                assert "resourceNames" not in rule or rule["resourceNames"] == list(
                    inputs.get("crds", _rbac.COLLECTION_CRDS)
                )
    # an empty list of CRDs drops the patch rule: resourceNames: [] would mean every CRD
    if inputs.get("crds") == []:
        assert not [r for r in cluster if "resourceNames" in r]


@pytest.mark.parametrize("inputs", [{"job_image": IMAGE}, CUSTOM])
def test_validate_jobs_are_granted_and_admitted_in_the_validation_namespace_only(inputs):
    manifest = _rbac.manifest(inputs)
    where = inputs.get("validate_namespaces", ["gpufabric-validation"])
    bound = _bound(manifest)
    for resource in ("jobs", "services", "pods/log"):
        granted = {ns for ns, rules in bound.items() for r in rules if resource in r["resources"]}
        assert sorted(granted) == where, resource
    # the default plan: nothing of validate's in the NADs' namespace, default, where workloads run
    if "nad_namespaces" not in inputs:
        assert not {r for rule in bound["default"] for r in rule["resources"]} & {"jobs", "services", "secrets"}
    # the Namespace is in the manifest (an administrator's apply makes it), without labels: the
    # administrator adds the Pod Security labels the cluster needs
    ns = [i for i in _items(manifest, "Namespace") if i["metadata"]["name"] in where]
    assert ns == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in where]
    jobs = next(i for i in manifest["items"] if i["metadata"]["name"] == "gpufabric-rollout-jobs")
    assert jobs["kind"] == "ValidatingAdmissionPolicy"
    assert "namespaceSelector" not in jobs["spec"]["matchConstraints"], "it must see Jobs in every namespace"
    first = jobs["spec"]["validations"][0]
    assert first == {
        "expression": "request.namespace in [" + ", ".join(f"'{n}'" for n in where) + "]",
        "message": "the NCCL Jobs run in validate_namespace only",
    }


def test_the_crds_the_admission_policy_admits_are_the_inputs():
    manifest = _rbac.manifest({**CUSTOM, "crds": ["widgets.example.com"]})
    kinds = next(i for i in manifest["items"] if i["metadata"]["name"] == "gpufabric-rollout-kinds")
    expression = kinds["spec"]["validations"][0]["expression"]
    assert "'widgets.example.com'" in expression and "mellanox" not in expression


# ------------------------------------------------------------------------------------- subjects
@pytest.mark.parametrize(
    ("subject", "binding", "expression"),
    [
        (
            {"kind": "User", "name": "alice@example.com"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice@example.com"},
            "request.userInfo.username == 'alice@example.com'",
        ),
        (
            {"kind": "Group", "name": "gpu-admins"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpu-admins"},
            "has(request.userInfo.groups) && 'gpu-admins' in request.userInfo.groups",
        ),
        (
            {"kind": "ServiceAccount", "name": "gpufabric-rollout", "namespace": "ops"},
            {"kind": "ServiceAccount", "name": "gpufabric-rollout", "namespace": "ops"},
            "request.userInfo.username == 'system:serviceaccount:ops:gpufabric-rollout'",
        ),
    ],
)
def test_every_binding_and_policy_follow_the_subject(subject, binding, expression):
    manifest = _rbac.manifest({**CUSTOM, "subject": subject})
    bindings = [i for i in manifest["items"] if i["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert bindings and all(b["subjects"] == [binding] for b in bindings)
    policies = _items(manifest, "ValidatingAdmissionPolicy")
    assert len(policies) == 3
    assert all(
        p["spec"]["matchConditions"] == [{"name": "gpufabric-rollout", "expression": expression}] for p in policies
    )


def test_the_filter_checks_the_subject_and_names_the_variables():
    assert _filter.rbac_subject("ServiceAccount", "ci", "ops") == {
        "kind": "ServiceAccount",
        "name": "ci",
        "namespace": "ops",
    }
    assert _filter.rbac_subject("User", "gpufabric-rollout", "") == {"kind": "User", "name": "gpufabric-rollout"}
    with pytest.raises(
        AnsibleFilterError, match=r"rbac_subject_kind: 'Robot' is not one of User, Group, ServiceAccount"
    ):
        _filter.rbac_subject("Robot", "x")
    with pytest.raises(AnsibleFilterError, match=r"rbac_subject_namespace: None is not a namespace"):
        _filter.rbac_subject("ServiceAccount", "ci")
    with pytest.raises(AnsibleFilterError, match=r"rbac_subject_name: \"x' \|\| true \|\| '\" is not a User name"):
        _filter.rbac_subject("User", "x' || true || '")
    with pytest.raises(AnsibleFilterError, match=r"rbac_subject_namespace: a Group has no namespace"):
        _filter.rbac_subject("Group", "admins", "ops")


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"nad_namespaces": ["ML_Rails"]}, r"nad_namespaces: 'ML_Rails' is not a namespace"),
        (
            {"operator_namespaces": {"helm": "x"}},
            r"operator_namespaces: .* maps none but network_operator and gpu_operator and dranet",
        ),
        ({"crds": ["widgets"]}, r"crds: \['widgets'\] is not a list of CRD names"),
        ({"job_image": None}, r"job_image: None is not an image reference \(validate_nccl_image\)"),
        (
            {"validate_namespaces": ["Checks"]},
            r"validate_namespaces: 'Checks' is not a namespace \(a DNS label\) \(validate_namespace\)",
        ),
        (
            {"subject": {"kind": "Robot", "name": "x"}},
            r"subject.kind: 'Robot' is not one of User, Group, ServiceAccount",
        ),
        ({"namespaces": ["x"]}, r"namespaces: not an input of the RBAC manifest"),
    ],
)
def test_bad_inputs_are_refused_naming_each(inputs, message):
    with pytest.raises(_rbac.RbacError, match=message):
        _rbac.manifest({"job_image": IMAGE, **inputs})


# ------------------------------------------------------------------------------------- from the plan's intent
def test_inputs_from_the_checked_intent():
    cluster = {
        "plan_cluster_roles": ["network_operator", "rdma_networks", "storage_csi"],
        "gpufabric_rails": {"nad_namespace": "ml-rails"},
        "network_operator_namespace": "netop",
        "gpu_operator_namespace": "unused",
        "storage_csi_drivers": {"nfs": {"namespace": "csi-nfs"}, "lustre": {"namespace": "lustre-csi-system"}},
    }
    filesystems = [
        {"name": "data", "backend": "nfs", "pods": "static_pv", "k8s": {"namespace": "ml-data"}},
        {"name": "home", "backend": "nfs", "pods": "storageclass", "k8s": {"secret_namespace": "nfs-secrets"}},
        {"name": "kept", "backend": "nfs", "pods": "storageclass", "k8s": {"secret": "mine", "secret_namespace": "x"}},
        {"name": "scratch", "backend": "lustre", "pods": "static_pv", "k8s": {}},
        {"name": "host-only", "backend": "nfs", "pods": "host", "k8s": {"namespace": "never"}},
    ]
    inputs = _rbac.inputs_from_intent(cluster, filesystems, {"kind": "User", "name": "u"}, IMAGE, "ml-checks")
    assert inputs == {
        "subject": {"kind": "User", "name": "u"},
        "operator_namespaces": {"network_operator": "netop"},
        "nad_namespaces": ["ml-rails"],
        "validate_namespaces": ["ml-checks"],
        "secret_namespaces": ["csi-nfs", "nfs-secrets"],
        "claim_namespaces": ["default", "ml-data"],
        "crds": list(_rbac.COLLECTION_CRDS),
        "job_image": IMAGE,
    }
    # dra mode: dranet's release namespace too (network_operator_dranet_namespace)
    dra = dict(cluster, gpufabric_k8s_device_allocation="dra", network_operator_dranet_namespace="nics")
    assert _rbac.inputs_from_intent(dra, filesystems, {"kind": "User", "name": "u"}, IMAGE, "ml-checks")[
        "operator_namespaces"
    ] == {"network_operator": "netop", "dranet": "nics"}
    # without storage_csi and rdma_networks: no claims, Secrets or ConfigMaps anywhere
    bare = _rbac.inputs_from_intent(
        {"plan_cluster_roles": []}, filesystems, {"kind": "User", "name": "u"}, IMAGE, "gpufabric-validation"
    )
    manifest = _rbac.manifest(bare)
    names = {i["metadata"]["name"] for i in manifest["items"]}
    assert not {"gpufabric-rollout-networks", "gpufabric-rollout-claims", "gpufabric-rollout-storage"} & names
    assert (
        "namespaceSelector"
        not in next(i for i in manifest["items"] if i["metadata"]["name"] == "gpufabric-rollout-owned")["spec"][
            "matchConstraints"
        ]
    )


def test_the_inputs_are_not_changed():
    inputs = copy.deepcopy(CUSTOM)
    _rbac.manifest(inputs)
    assert inputs == CUSTOM
