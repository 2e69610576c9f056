# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Kubernetes permissions a role needs, and how to say which ones are missing.

Pure and typed. A rule is the shape of an RBAC PolicyRule narrowed to what a role does:
``{api_group, resources, verbs, namespace, names}`` (``namespace`` unset or empty: cluster-scoped
objects, or every namespace; ``names``: the objects the verbs are used on, for a grant narrowed by
``resourceNames``). `expand()` turns rules into one check per (verb, resource, namespace, name) in
the shape of a SelfSubjectAccessReview's ``resourceAttributes``;
`missing_message()` words the refusal so that it names each verb and resource.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _cluster_objects
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _plan_rbac
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind", "escalate")


# Resource names of the built-in kinds the roles write, by (API group, kind); custom kinds take the
# plural of their CRD (the planners' CRD_NAMES).
BUILTIN_RESOURCES = {
    ("", "ConfigMap"): "configmaps",
    ("", "Namespace"): "namespaces",
    ("", "Node"): "nodes",
    ("", "Secret"): "secrets",
    ("", "Service"): "services",
    ("batch", "Job"): "jobs",
    ("", "PersistentVolume"): "persistentvolumes",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "ServiceAccount"): "serviceaccounts",
    ("apps", "Deployment"): "deployments",
    ("apps", "DaemonSet"): "daemonsets",
    ("apps", "StatefulSet"): "statefulsets",
    ("storage.k8s.io", "StorageClass"): "storageclasses",
    ("storage.k8s.io", "CSIDriver"): "csidrivers",
    ("rbac.authorization.k8s.io", "ClusterRole"): "clusterroles",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "clusterrolebindings",
    ("rbac.authorization.k8s.io", "Role"): "roles",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "customresourcedefinitions",
    # gpufabric_k8s_device_allocation: dra (plan/dra.py): cluster-scoped DeviceClasses, and the
    # ResourceClaimTemplates in the NADs' namespace.
    ("resource.k8s.io", "DeviceClass"): "deviceclasses",
    ("resource.k8s.io", "ResourceClaimTemplate"): "resourceclaimtemplates",
}
CRD_NAMES = {**_cluster_objects.CRD_NAMES, **_plan_storage_csi.CRD_NAMES}
# What applying an object costs, as kubernetes.core.k8s does it with server-side apply: a read
# first, then an apply patch, which creates the object when it is missing (the API server
# authorises that as a create).
APPLY_VERBS = ["get", "create", "patch"]


class AccessRuleError(ValueError):
    """A rule is malformed (the message names the rule and the field)."""


def expand(rules: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    """One resourceAttributes dict per verb and resource of `rules`, in order, without duplicates."""
    checks: List[Dict[str, str]] = []
    seen = set()
    for index, rule in enumerate(rules or []):
        if not isinstance(rule, dict):
            raise AccessRuleError(f"rules[{index}] must be a mapping, got {rule!r}")
        resources, verbs = rule.get("resources") or [], rule.get("verbs") or []
        if not resources or not verbs:
            raise AccessRuleError(f"rules[{index}] needs non-empty resources and verbs: {rule!r}")
        bad = [v for v in verbs if v not in VERBS]
        if bad:
            raise AccessRuleError(f"rules[{index}].verbs: {', '.join(map(str, bad))} not one of {', '.join(VERBS)}")
        group = rule.get("api_group") or ""
        namespace = rule.get("namespace") or ""
        for resource, verb, obj in itertools.product(resources, verbs, rule.get("names") or [""]):
            name, _slash, sub = str(resource).partition("/")
            key = (group, name, sub, namespace, verb, obj)
            if key in seen:
                continue
            seen.add(key)
            attrs = {"group": group, "resource": name, "verb": verb}
            if sub:
                attrs["subresource"] = sub
            if namespace:
                attrs["namespace"] = namespace
            if obj:
                attrs["name"] = str(obj)
            checks.append(attrs)
    return checks


def apply_rules(objects: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The rules to server-side apply `objects`: one per resource and namespace, in first-seen order."""
    rules: List[Dict[str, Any]] = []
    index: Dict[tuple, Dict[str, Any]] = {}
    for obj in objects or []:
        kind = obj.get("kind", "")
        group = obj.get("apiVersion", "").rpartition("/")[0]
        if kind in CRD_NAMES and CRD_NAMES[kind].split(".", 1)[1] == group:
            resource = CRD_NAMES[kind].split(".", 1)[0]
        elif (group, kind) in BUILTIN_RESOURCES:
            resource = BUILTIN_RESOURCES[(group, kind)]
        else:
            raise AccessRuleError(f"no resource name known for {obj.get('apiVersion')} {kind}")
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        key = (group, resource, namespace)
        if key not in index:
            index[key] = {
                "api_group": group,
                "resources": [resource],
                "verbs": list(APPLY_VERBS),
                "namespace": namespace,
            }
            rules.append(index[key])
    return rules


def helm_release_rules(namespaces: List[str]) -> List[Dict[str, Any]]:
    """What kubernetes.core.helm needs for releases in `namespaces` (create_namespace: true): the namespace, and
    the release records (Secrets) there. What a chart installs beyond that is the chart's business."""
    rules: List[Dict[str, Any]] = []
    for namespace in sorted(set(namespaces or [])):
        if not rules:
            rules.append({"api_group": "", "resources": ["namespaces"], "verbs": ["get", "create"], "namespace": ""})
        rules.append(
            {
                "api_group": "",
                "resources": ["secrets"],
                "verbs": ["get", "list", "create", "update", "delete"],
                "namespace": namespace,
            }
        )
    return rules


def describe(check: Dict[str, str]) -> str:
    """``verb resource[/sub][.group] (where)``, the way kubectl and the API server name them."""
    resource = check["resource"] + ("/" + check["subresource"] if check.get("subresource") else "")
    if check.get("group"):
        resource += "." + check["group"]
    where = f"in namespace {check['namespace']}" if check.get("namespace") else "cluster-wide"
    named = f" {check['name']}" if check.get("name") else ""
    return f"{check['verb']} {resource}{named} ({where})"


def missing_message(user: Optional[Dict[str, Any]], missing: List[Dict[str, str]], purpose: str, grant: str) -> str:
    """The refusal: who, what is missing (every verb and resource), what it is for, how to grant it."""
    who = (user or {}).get("username") or "the kubeconfig's identity"
    groups = [g for g in (user or {}).get("groups") or [] if g != "system:authenticated"]
    if groups:
        who += f" (groups: {', '.join(groups)})"
    return "{} may not {}; {} needs {}. {}".format(
        who,
        "; ".join(describe(m) for m in missing),
        purpose or "this task",
        "this" if len(missing) == 1 else "these",
        grant,
    )


# What the shipped ClusterRole (plan/rbac.py CLUSTER_RULES, rendered in docs/rbac/gpufabric-rollout.yaml)
# grants cluster-wide on any object, as {(api group, resource): verbs}. An identity whose rules in a
# namespace the collection never writes (``BROAD_PROBE_NAMESPACE``) reach beyond this can do more
# than the collection needs: an administrator's kubeconfig, typically. ConfigMaps, claims, Jobs,
# Services and Secrets are granted by Roles in the namespaces the plan names, never here.
SHIPPED_CLUSTER_RULES = _plan_rbac.cluster_rule_table()
# The CRDs the collection installs (plan/rbac.py), the only ones the shipped ClusterRole lets it
# patch (resourceNames) and the admission policy lets it create.
COLLECTION_CRDS = tuple(sorted(_plan_rbac.COLLECTION_CRDS))
# Every authenticated user may ask about itself (the system:basic-user ClusterRole); not an excess.
_SELF_REVIEWS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}
BROAD_PROBE_NAMESPACE = "kube-system"


def excess_rules(resource_rules: List[Dict[str, Any]]) -> List[str]:
    """The rules of a SelfSubjectRulesReview (``status.resourceRules``) that grant more than the shipped
    ClusterRole, each as ``verbs resources.group`` (``*`` kept: a wildcard is the excess)."""
    out: List[str] = []
    for rule in resource_rules or []:
        verbs = [str(v) for v in rule.get("verbs") or []]
        groups = [str(g) for g in rule.get("apiGroups") or [""]]
        resources = [str(r) for r in rule.get("resources") or []]
        if rule.get("resourceNames"):
            continue  # narrowed to named objects: not a blanket grant
        for group in groups:
            for resource in resources:
                if (group, resource) in _SELF_REVIEWS:
                    continue
                allowed = SHIPPED_CLUSTER_RULES.get((group, resource), ())
                extra = [v for v in verbs if v == "*" or v not in allowed]
                if extra:
                    name = resource + ("." + group if group else "")
                    text = f"{','.join(extra)} {name}"
                    if text not in out:
                        out.append(text)
    return out


def excess_message(user: Optional[Dict[str, Any]], server: str, excess: List[str]) -> str:
    """The warning for an identity that can do more than the shipped RBAC."""
    who = (user or {}).get("username") or "the kubeconfig's identity"
    shown = excess[:12] + ([f"... {len(excess) - 12} more"] if len(excess) > 12 else [])
    return (
        f"{who} on {server or 'the cluster'} can do more than the shipped RBAC (docs/rbac/gpufabric-rollout.yaml)"
        f" grants: {'; '.join(shown)}. Run the collection as its least-privilege identity, not an administrator."
    )
