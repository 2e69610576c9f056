#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_access
short_description: Check that the cluster identity may do what a role is about to do
version_added: 0.1.0
description:
  - Asks the API server, with one SelfSubjectAccessReview per verb and resource, whether the
    identity of the kubeconfig may do each thing in O(rules), and fails before anything changes
    when it may not, naming every missing verb and resource and what grants them.
  - The cluster roles run it first in apply mode, so a missing RBAC rule stops a run before its
    first change instead of half-way through. C(docs/rbac/gpufabric-rollout.yaml) in the
    collection holds the ClusterRole that grants what the roles need.
  - Also asks, with a SelfSubjectRulesReview in C(kube-system) (a namespace the collection never
    writes), what the identity may do there and cluster-wide, and warns, naming the rules, when it
    can do more than the shipped ClusterRole grants (an administrator's kubeconfig, with C(*) verbs on
    C(*) resources). Returns the user (SelfSubjectReview) and the API server it is about to change.
  - Needs the C(kubernetes) Python library on the controller, as C(kubernetes.core) does.
options:
  rules:
    description: What the role does, in the shape of RBAC rules.
    type: list
    elements: dict
    required: true
    suboptions:
      api_group:
        description: API group of the resources; empty for the core group.
        type: str
        default: ""
      resources:
        description: Resource names (plural, lower case), with C(/subresource) where one is meant,
          for example C(pods/eviction).
        type: list
        elements: str
        required: true
      verbs:
        description: Verbs to check.
        type: list
        elements: str
        required: true
        choices: [get, list, watch, create, update, patch, delete, deletecollection, bind, escalate]
      namespace:
        description: Namespace of namespaced resources; empty for cluster-scoped resources and for
          all namespaces.
        type: str
        default: ""
      names:
        description: The objects the verbs are used on, one check each; for permissions granted
          by name only (RBAC C(resourceNames)). Empty for any object.
        type: list
        elements: str
        default: []
  purpose:
    description: What needs the permissions (a role name), for the failure message.
    type: str
    default: ""
  grant:
    description: How to grant what is missing, appended to the failure message.
    type: str
    default: The collection ships the ClusterRole and Role that grant it in docs/rbac/gpufabric-rollout.yaml.
  fail_on_missing:
    description: Fail when anything is missing; with C(false), report it in RV(missing) only.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufabric.rollout.read_only
  - kubernetes.core.k8s_auth_options
  - gpufabric.rollout.api_client
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Check the identity may label nodes and apply the policies
  gpufabric.rollout.k8s_access:
    kubeconfig: "{{ gpufabric_kubeconfig }}"
    purpose: network_operator
    rules:
      - {resources: [nodes], verbs: [get, patch]}
      - {api_group: mellanox.com, resources: [nicclusterpolicies], verbs: [get, create, patch]}
"""

RETURN = r"""
user:
  description: Who the API server says the identity is (SelfSubjectReview), when it says.
  returned: success
  type: dict
  sample: {"username": "gpufabric-rollout", "groups": ["system:authenticated"]}
server:
  description: The API server URL of the kubeconfig, the cluster the role is about to change.
  returned: success
  type: str
  sample: https://10.0.0.1:6443
excess:
  description: Rules the identity holds beyond the shipped ClusterRole (C(verbs resource.group)),
    from a SelfSubjectRulesReview in C(kube-system); empty when it holds none or the review failed.
  returned: success
  type: list
  elements: str
  sample: ["* *.*"]
checked:
  description: How many verb and resource pairs were checked.
  returned: success
  type: int
  sample: 14
missing:
  description: The checks the API server denied, as SelfSubjectAccessReview resourceAttributes.
  returned: success
  type: list
  elements: dict
  sample: [{"verb": "patch", "resource": "nodes", "group": ""}]
"""

import copy
import json

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry
from ansible_collections.kubernetes.core.plugins.module_utils.ansiblemodule import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"


DEFAULT_GRANT = "The collection ships the ClusterRole and Role that grant it in docs/rbac/gpufabric-rollout.yaml."


def _post(client, path, body, max_total=60.0):
    """One review, retried on 429, 5xx and connection failures for at most ``max_total`` seconds."""
    what = f"{body.get('kind')} {json.dumps((body.get('spec') or {}).get('resourceAttributes') or {}, sort_keys=True)}"
    review = _k8s_retry.call(
        lambda: client.client.request("POST", path, body=body, content_type="application/json"), what, max_total
    )
    return review.to_dict() if hasattr(review, "to_dict") else review


def whoami(client):
    """The API server's view of the identity (SelfSubjectReview), or None where it has none."""
    try:
        review = _post(client, SSR, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, 10.0)
    except Exception:  # (only for the message; older servers lack the API)
        return None
    return (review.get("status") or {}).get("userInfo")


def broad_rules(client):
    """What the identity holds beyond the shipped ClusterRole (SelfSubjectRulesReview), or None."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": _k8s_access.BROAD_PROBE_NAMESPACE},
    }
    try:
        review = _post(client, SSRR, body)
    except Exception:  # (only for the warning; the access checks above decide)
        return None
    status = review.get("status") or {}
    rules = status.get("resourceRules") or status.get("resource_rules") or []
    return _k8s_access.excess_rules([_camel(r) for r in rules])


def _camel(rule):
    names = {"api_groups": "apiGroups", "resource_names": "resourceNames"}
    return {names.get(k, k): v for k, v in (rule or {}).items()}


def server_of(client):
    configuration = getattr(getattr(client, "client", None), "configuration", None)
    return str(getattr(configuration, "host", "") or "")


def denied(client, checks):
    """The checks the API server does not allow, one SelfSubjectAccessReview each."""
    out = []
    for attrs in checks:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        if not (_post(client, SSAR, body).get("status") or {}).get("allowed"):
            out.append(attrs)
    return out


def main():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        rules=dict(
            type="list",
            elements="dict",
            required=True,
            options=dict(
                api_group=dict(type="str", default=""),
                resources=dict(type="list", elements="str", required=True),
                verbs=dict(type="list", elements="str", required=True, choices=list(_k8s_access.VERBS)),
                namespace=dict(type="str", default=""),
                names=dict(type="list", elements="str", default=[]),
            ),
        ),
        purpose=dict(type="str", default=""),
        grant=dict(type="str", default=DEFAULT_GRANT),
        fail_on_missing=dict(type="bool", default=True),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=spec, supports_check_mode=True)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    result = dict(changed=False, user=None, server="", excess=[], checked=0, missing=[])
    error = None
    try:
        checks = _k8s_access.expand(module.params["rules"])
        result["checked"] = len(checks)
        client = get_api_client(module=module)
        result["user"] = whoami(client)
        result["server"] = server_of(client)
        result["missing"] = denied(client, checks)
        result["excess"] = broad_rules(client) or []
        if result["excess"]:
            module.warn(_k8s_access.excess_message(result["user"], result["server"], result["excess"]))
        if result["missing"] and module.params["fail_on_missing"]:
            error = _k8s_access.missing_message(
                result["user"], result["missing"], module.params["purpose"], module.params["grant"]
            )
    except _k8s_access.AccessRuleError as exc:
        error = f"rules: {exc}"
    except _k8s_retry.RetryError as exc:
        error = f"could not ask the API server about access: {exc}"
    except CoreException as exc:
        error = f"could not reach the API server: {exc}"
    except Exception as exc:  # (API errors: one clear failure naming the cause)
        error = f"could not ask the API server about access: {exc}"
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
