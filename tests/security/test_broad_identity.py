"""Issue 37, finding 2: nothing checked that the kubeconfig is the intended identity (the AWX example
loads an administrator's ~/.kube/config). k8s_access now names the rules an identity holds beyond
the shipped ClusterRole; this is the comparison, against docs/rbac/gpufabric-rollout.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access

RBAC = Path(__file__).resolve().parents[2] / "docs" / "rbac" / "gpufabric-rollout.yaml"
# What the API server answers a SelfSubjectRulesReview for the lab's cluster-admin (system:masters)
# and for every authenticated user (system:basic-user, system:discovery): Kubernetes RBAC docs,
# "Default roles and role bindings".
ADMIN = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]},
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
]


def _shipped_rules():
    items = yaml.safe_load(RBAC.read_text())["items"]
    role = next(i for i in items if i["kind"] == "ClusterRole" and i["metadata"]["name"] == "gpufabric-rollout")
    keys = ("verbs", "apiGroups", "resources", "resourceNames")
    return [{k: r[k] for k in keys if k in r} for r in role["rules"]]


def test_an_admin_identity_is_named_with_its_wildcard_rule():
    excess = _k8s_access.excess_rules(ADMIN)
    assert excess == ["* *.*"]
    message = _k8s_access.excess_message({"username": "kubernetes-admin"}, "https://10.0.0.1:6443", excess)
    assert "kubernetes-admin on https://10.0.0.1:6443 can do more than the shipped RBAC" in message
    assert "* *.*" in message


def test_the_shipped_identity_holds_no_excess():
    assert _k8s_access.excess_rules(_shipped_rules()) == []


def test_the_module_knows_the_shipped_cluster_role():
    shipped = {}
    for rule in _shipped_rules():
        if rule.get("resourceNames"):
            continue  # narrowed to named objects: no blanket grant
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                shipped[(group, resource)] = tuple(rule["verbs"])
    assert shipped == _k8s_access.SHIPPED_CLUSTER_RULES


def test_crds_are_patched_by_name_only_and_those_the_collection_installs():
    named = [r for r in _shipped_rules() if r.get("resourceNames")]
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in named] == [
        (["apiextensions.k8s.io"], ["customresourcedefinitions"], ["patch"])
    ]
    assert sorted(named[0]["resourceNames"]) == list(_k8s_access.COLLECTION_CRDS)


def test_one_more_verb_or_resource_is_named():
    rules = [
        {"verbs": ["get", "list", "patch", "update"], "apiGroups": [""], "resources": ["nodes"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]},
        {"verbs": ["escalate", "bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"]},
    ]
    assert _k8s_access.excess_rules(rules) == [
        "update nodes",
        "get secrets",
        "escalate,bind clusterroles.rbac.authorization.k8s.io",
    ]
