"""Access checks of the cluster roles (plugins/module_utils/apply/k8s_access.py) and the RBAC the
collection ships for them (docs/rbac/gpufabric-rollout.yaml): every permission a role checks is
granted, and every permission granted is one a role (or the lab's operator chart) uses."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any, Dict, List, Optional

import jinja2
import pytest
import yaml
from intent_support import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _dra
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _network_objects
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

REPO = Path(__file__).resolve().parents[3]
RBAC = REPO / "docs" / "rbac" / "gpufabric-rollout.yaml"
CHART = REPO / "lab" / "charts" / "network-operator" / "templates"
CIDRS = {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"}


def _storage_support():
    """tests/unit/storage/storage_support.py (the lab's storage intent, planned), loaded by path."""
    spec = importlib.util.spec_from_file_location(
        "storage_support_for_access", REPO / "tests/unit/storage/storage_support.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def storage_plan() -> Dict[str, Any]:
    """The cluster's storage plan of the lab's storage intent: every backend, StorageClasses and static volumes."""
    support = _storage_support()
    specs = support.PLAN.load_specs(str(REPO))
    return support.cluster_plan(lambda scope, variables: support.PLAN.check(specs, scope, variables))["storage"]


def test_expand_checks_each_verb_and_resource_once():
    checks = _k8s_access.expand(
        [
            {"resources": ["nodes"], "verbs": ["get", "patch"]},
            {"resources": ["pods/eviction"], "verbs": ["create"], "namespace": ""},
            {"api_group": "mellanox.com", "resources": ["nicclusterpolicies"], "verbs": ["get"]},
            {"resources": ["nodes"], "verbs": ["get"]},  # already checked
            {"resources": ["secrets"], "verbs": ["list"], "namespace": "ops"},
        ]
    )
    assert checks == [
        {"group": "", "resource": "nodes", "verb": "get"},
        {"group": "", "resource": "nodes", "verb": "patch"},
        {"group": "", "resource": "pods", "verb": "create", "subresource": "eviction"},
        {"group": "mellanox.com", "resource": "nicclusterpolicies", "verb": "get"},
        {"group": "", "resource": "secrets", "verb": "list", "namespace": "ops"},
    ]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"resources": ["nodes"], "verbs": ["read"]}, "rules[0].verbs: read not one of get, list"),
        ({"resources": [], "verbs": ["get"]}, "rules[0] needs non-empty resources and verbs"),
        ("nodes", "rules[0] must be a mapping"),
    ],
)
def test_expand_refuses_malformed_rules(rule, message):
    with pytest.raises(_k8s_access.AccessRuleError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _k8s_access.expand([rule])


def test_missing_message_names_who_each_verb_resource_and_scope():
    missing = _k8s_access.expand(
        [
            {"resources": ["nodes"], "verbs": ["patch"]},
            {"resources": ["secrets"], "verbs": ["create"], "namespace": "nvidia-network-operator"},
            {"resources": ["pods/eviction"], "verbs": ["create"]},
            {"api_group": "nv-ipam.nvidia.com", "resources": ["ippools"], "verbs": ["patch"]},
        ]
    )
    user = {"username": "gpufabric-rollout", "groups": ["ops", "system:authenticated"]}
    msg = _k8s_access.missing_message(user, missing, "network_operator", "Grant docs/rbac.")
    assert msg == (
        "gpufabric-rollout (groups: ops) may not patch nodes (cluster-wide); create secrets (in namespace "
        "nvidia-network-operator); create pods/eviction (cluster-wide); patch ippools.nv-ipam.nvidia.com "
        "(cluster-wide); network_operator needs these. Grant docs/rbac."
    )
    one = _k8s_access.missing_message(None, missing[:1], "", "")
    assert one.startswith("the kubeconfig's identity may not patch nodes (cluster-wide); this task needs this.")


def test_apply_rules_follow_the_planned_objects(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16", "nad_namespace": "gpu-workloads"}, dgx, CIDRS, {"mtu": 9000})
    rules = FilterModule().filters()["k8s_apply_rules"](plan["objects"]["rdma_networks"])
    assert rules == [
        {
            "api_group": "nv-ipam.nvidia.com",
            "resources": ["ippools"],
            "verbs": ["get", "create", "patch"],
            "namespace": "nvidia-network-operator",
        },
        {
            "api_group": "k8s.cni.cncf.io",
            "resources": ["network-attachment-definitions"],
            "verbs": ["get", "create", "patch"],
            "namespace": "gpu-workloads",
        },
        {
            "api_group": "",
            "resources": ["configmaps"],
            "verbs": ["get", "create", "patch"],
            "namespace": "gpu-workloads",
        },
    ]
    policies = _k8s_access.apply_rules(plan["objects"]["network_operator"])
    assert policies == [
        {
            "api_group": "mellanox.com",
            "resources": ["nicclusterpolicies"],
            "verbs": ["get", "create", "patch"],
            "namespace": "",
        }
    ]


def test_apply_rules_name_the_storage_kinds(storage_plan):
    objects = [o for part in storage_plan["objects"].values() for o in part]
    rules = _k8s_access.apply_rules(objects)
    assert [(r["api_group"], r["resources"][0], r["namespace"]) for r in rules] == [
        ("storage.k8s.io", "storageclasses", ""),
        ("", "secrets", "csi-driver-nfs"),
        ("", "persistentvolumes", ""),
        ("", "persistentvolumeclaims", "default"),
        ("csi.ibm.com", "csiscaleoperators", "ibm-spectrum-scale-csi-driver"),
    ]
    assert all(r["verbs"] == ["get", "create", "patch"] for r in rules)


def test_helm_release_rules_per_namespace():
    assert _k8s_access.helm_release_rules([]) == []
    assert _k8s_access.helm_release_rules(["csi-wekafs", "csi-driver-nfs", "csi-wekafs"]) == [
        {"api_group": "", "resources": ["namespaces"], "verbs": ["get", "create"], "namespace": ""},
        {
            "api_group": "",
            "resources": ["secrets"],
            "verbs": ["get", "list", "create", "update", "delete"],
            "namespace": "csi-driver-nfs",
        },
        {
            "api_group": "",
            "resources": ["secrets"],
            "verbs": ["get", "list", "create", "update", "delete"],
            "namespace": "csi-wekafs",
        },
    ]


def test_apply_rules_refuse_a_kind_of_another_group():
    with pytest.raises(_k8s_access.AccessRuleError, match=r"no resource name known for example\.io/v1 StorageClass"):
        _k8s_access.apply_rules([{"apiVersion": "example.io/v1", "kind": "StorageClass", "metadata": {"name": "s"}}])


def test_apply_rules_refuse_an_unknown_kind():
    with pytest.raises(_k8s_access.AccessRuleError, match=r"no resource name known for example\.io/v1 Widget"):
        _k8s_access.apply_rules([{"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}}])


# ------------------------------------------------------------------- the shipped RBAC, evaluated
class Rbac:
    """What the shipped objects grant the user gpufabric-rollout (RBAC is additive: any rule allows)."""

    def __init__(self, docs: List[Dict[str, Any]]):
        roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
        self.grants = []  # (namespace or "" for cluster-wide, rule)
        for doc in docs:
            if doc["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            assert {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "gpufabric-rollout"} in doc[
                "subjects"
            ]
            ns = doc["metadata"].get("namespace", "")
            ref = doc["roleRef"]
            role = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
            self.grants += [(ns, rule) for rule in role["rules"]]

    def allows(self, check: Dict[str, str]) -> bool:
        resource = check["resource"] + ("/" + check["subresource"] if check.get("subresource") else "")
        for ns, rule in self.grants:
            if ns and ns != check.get("namespace"):
                continue
            if rule.get("resourceNames") and check.get("name") not in rule["resourceNames"]:
                continue
            if check["group"] in rule["apiGroups"] and resource in rule["resources"] and check["verb"] in rule["verbs"]:
                return True
        return False

    def granted(self):
        for ns, rule in self.grants:
            names = rule.get("resourceNames") or [""]
            for group, resource, verb, obj in itertools.product(
                rule["apiGroups"], rule["resources"], rule["verbs"], names
            ):
                name, _slash, sub = resource.partition("/")
                check = {"group": group, "resource": name, "verb": verb}
                if sub:
                    check["subresource"] = sub
                if ns:
                    check["namespace"] = ns
                if obj:
                    check["name"] = obj
                yield check


def _role_vars(role: str, table: str, extra: Optional[Dict[str, Any]] = None) -> Any:
    """A role's access table with its templates rendered against the role's defaults (and `extra`)."""
    defaults = dict(yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()), **(extra or {}))
    raw = yaml.safe_load((REPO / "roles" / role / "vars" / "main.yml").read_text())[table]
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)

    def render(value):
        if isinstance(value, str):
            if value.startswith("{{") and value.endswith("}}") and value[2:-2].strip() in defaults:
                return defaults[value[2:-2].strip()]  # a whole value (a list), as Ansible's native types keep it
            return env.from_string(value).render(**defaults)
        if isinstance(value, list):
            return [render(v) for v in value]
        if isinstance(value, dict):
            return {k: render(v) for k, v in value.items()}
        return value

    return render(raw)


def _validate_checks(plan: Dict[str, Any], topologies: Dict[str, Any]) -> List[Dict[str, str]]:
    """validate's NCCL Jobs, as its access check asks: applying the Job set of the plan's node group
    (with the device plugins, and in dra mode with its copy of the group's claim template), its own
    table (cleanup, logs; claim_cleanup in dra mode) in the Jobs' namespace (validate_namespace), and
    creating that namespace (cluster-wide)."""
    nodes = {n: n for g in plan["node_groups"] for n in g["nodes"]}
    defaults = yaml.safe_load((REPO / "roles" / "validate" / "defaults" / "main.yml").read_text())
    options = {"image": "i", "binary": "/b", "min_bytes": "1M", "max_bytes": "8G", "iters": 20, "timeout": 900}
    options.update(ssh_port=2222, keep_jobs=False, namespace=defaults["validate_namespace"])
    groups = [{"name": g["name"], "nodes": g["nodes"]} for g in plan["node_groups"]]
    dra = _dra.plan(groups, topologies, plan["config"]["nad_namespace"], "gpufabric.io/node-group")
    jobs = (
        _validate_jobs.job_set(plan, nodes, options)["jobs"] + _validate_jobs.job_set(plan, nodes, options, dra)["jobs"]
    )
    assert len(jobs) == 2, "the DGX plan gives a Job in each mode"
    assert {j["namespace"] for j in jobs} == {"gpufabric-validation"} != {plan["config"]["nad_namespace"]}
    objects = [o for job in jobs for o in job["objects"]] + [_validate_jobs.secret(j, "", "") for j in jobs]
    assert "ResourceClaimTemplate" in {o["kind"] for o in objects}
    access = _role_vars("validate", "__validate_access")
    tables = access["cleanup"] + access["logs"] + access["claim_cleanup"]
    namespaced = [dict(rule, namespace=jobs[0]["namespace"]) for rule in tables]
    assert set(access) == {"cleanup", "logs", "claim_cleanup", "namespace"}
    return _k8s_access.expand(_k8s_access.apply_rules(objects) + namespaced + access["namespace"])


def _dra_objects(plan: Dict[str, Any], topologies: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The DRA section's objects for `plan`'s node groups (plan/dra.py), in its NADs' namespace."""
    groups = [{"name": g["name"], "nodes": g["nodes"]} for g in plan["node_groups"]]
    namespace = plan["config"]["nad_namespace"]
    return _dra.plan(groups, topologies, namespace, "gpufabric.io/node-group")["objects"]


def _dra_prune_kinds(namespace: str) -> List[Dict[str, Any]]:
    """rdma_networks' __rdma_networks_dra_prune, its templates' namespace rendered as `namespace`."""
    raw = yaml.safe_load((REPO / "roles" / "rdma_networks" / "vars" / "main.yml").read_text())
    kinds = raw["__rdma_networks_dra_prune"]
    return [dict(k, namespace=namespace) if "namespace" in k else k for k in kinds]


# The CRDs network_operator and gpu_operator apply by name (their __<role>_crd_names), every one they can.
CRDS_BY_ROLE = {
    "network_operator": {"__network_operator_crd_names": sorted(set(_network_objects.CRD_NAMES.values()))},
    # Every CRD either device allocation mode applies (dra: the GPUCluster and ComputeDomain kinds).
    "gpu_operator": {
        "__gpu_operator_crd_names": sorted(set(_plan_gpu_operator.DRA_CRDS) | {"nvidiadrivers.nvidia.com"})
    },
}


@pytest.fixture(scope="module")
def role_checks(dgx_cluster, mixed_cluster, storage_plan) -> Dict[str, List[Dict[str, str]]]:
    """Every check each role can make (every option on; storage_csi with the drivers installed by an
    administrator, storage_csi_install_drivers false), over plans that use every kind."""
    # Mixed hardware: NicNodePolicies, one per node group.
    mixed_rails = [{"rail": 0}, {"rail": 1}] + [{"rail": r, "node_groups": ["h200-connectx-7-8r"]} for r in range(2, 8)]
    plans = [cluster_plan({"supernet": "10.200.0.0/16", "rails": mixed_rails}, mixed_cluster, CIDRS, {"mtu": 9000})]
    plans += [
        cluster_plan(
            {"supernet": "10.200.0.0/16", "ipam": ipam, "nad_type": nad_type},
            dgx_cluster,
            CIDRS,
            {"mtu": 9000, "rdma_netns_mode": "exclusive" if nad_type == "sriov" else "shared"},
        )
        for ipam, nad_type in [
            ("nv-ipam-ippool", "macvlan"),
            ("nv-ipam-cidrpool", "macvlan"),
            ("nv-ipam-ippool", "sriov"),
        ]
    ]
    out: Dict[str, List[Dict[str, Any]]] = {}
    out["validate"] = _validate_checks(plans[1], dgx_cluster)
    for role, table in [
        ("network_operator", "__network_operator_access"),
        ("rdma_networks", "__rdma_networks_access"),
        ("sriov_networks", "__sriov_networks_access"),
        ("node_maintenance", "__node_maintenance_access"),
        ("plan", "__plan_upgrade_access"),
        ("gpu_operator", "__gpu_operator_access"),
        ("storage_csi", "__storage_csi_access"),
    ]:
        access = _role_vars(role, table, CRDS_BY_ROLE.get(role))
        rules = access if isinstance(access, list) else [r for part in access.values() for r in part]
        if role == "plan":
            # the upgrade's move of the device allocation, checked once a node is to move
            rules = rules + _role_vars(role, "__plan_migration_access")
        prune = yaml.safe_load((REPO / "roles" / role / "vars" / "main.yml").read_text()).get(f"__{role}_prune")
        rules += _k8s_publish.prune_rules(prune or [])
        if role == "rdma_networks":
            # the NCCL ConfigMaps, listed in the NADs' namespace only (vars/main.yml __rdma_networks_prune_kinds)
            rules += _k8s_publish.prune_rules(
                [
                    {"api_group": "", "version": "v1", "resources": ["configmaps"], "namespace": namespace}
                    for namespace in sorted({p["config"]["nad_namespace"] for p in plans})
                ]
            )
        for plan in plans:
            rules += _k8s_access.apply_rules(plan["objects"].get(role, []))
        if role == "rdma_networks":
            # gpufabric_k8s_device_allocation: dra: the DeviceClasses and claim templates of the DGX plan,
            # applied with the rails' objects, and their kinds pruned (__rdma_networks_dra_prune)
            rules += _k8s_access.apply_rules(_dra_objects(plans[1], dgx_cluster))
            rules += _k8s_publish.prune_rules(_dra_prune_kinds(plans[1]["config"]["nad_namespace"]))
        if role == "storage_csi":
            rules += _k8s_access.apply_rules([o for part in storage_plan["objects"].values() for o in part])
            # the Secrets are pruned in their namespaces only (vars/main.yml __storage_csi_prune_kinds)
            rules += _k8s_publish.prune_rules(storage_plan["secret_prune_kinds"])
            rules += _k8s_publish.prune_rules(storage_plan["claim_prune_kinds"])
        out[role] = _k8s_access.expand(rules)
    return out


@pytest.fixture(scope="module")
def shipped() -> Rbac:
    return Rbac(yaml.safe_load(RBAC.read_text())["items"])


@pytest.mark.parametrize(
    "role",
    [
        "network_operator",
        "rdma_networks",
        "sriov_networks",
        "node_maintenance",
        "plan",
        "gpu_operator",
        "validate",
        "storage_csi",
    ],
)
def test_the_shipped_rbac_grants_what_each_role_checks(role, role_checks, shipped):
    denied = [_k8s_access.describe(c) for c in role_checks[role] if not shipped.allows(c)]
    assert denied == []


def test_the_shipped_rbac_grants_nothing_the_roles_do_not_use(role_checks, shipped):
    used = [c for checks in role_checks.values() for c in checks]
    # Helm installs the lab chart's objects into the operator's namespace (get, create, patch, delete).
    for path in sorted(CHART.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        group = doc["apiVersion"].rpartition("/")[0]
        resource = {"ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Deployment": "deployments"}[
            doc["kind"]
        ]
        used += [
            {"group": group, "resource": resource, "verb": v, "namespace": "nvidia-network-operator"}
            for v in ("get", "create", "patch", "delete")
        ]
    # The GPU Operator stand-in chart's namespaced objects (lab/charts/gpu-operator/templates).
    used += [
        {"group": group, "resource": resource, "verb": v, "namespace": "gpu-operator"}
        for group, resource in (("", "serviceaccounts"), ("apps", "deployments"))
        for v in ("get", "create", "patch", "delete")
    ]
    # The dranet stand-in chart's (lab/charts/dranet/templates), in dra mode.
    used += [
        {"group": group, "resource": resource, "verb": v, "namespace": "dranet"}
        for group, resource in (("", "serviceaccounts"), ("apps", "daemonsets"))
        for v in ("get", "create", "patch", "delete")
    ]

    def covered(grant):
        return any(
            all(u.get(k) == grant.get(k) for k in ("group", "resource", "subresource", "verb"))
            and (grant.get("namespace") in (None, u.get("namespace")))
            and (grant.get("name") in (None, u.get("name")))
            for u in used
        )

    unused = [_k8s_access.describe(g) for g in shipped.granted() if not covered(g)]
    assert unused == []
