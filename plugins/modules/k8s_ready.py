#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_ready
short_description: Wait until every listed Kubernetes object is ready, in one call with one API client
version_added: 0.1.0
description:
  - Reads each object of O(objects) and reads again, every O(delay) seconds, those that are not ready yet, until
    all are ready or O(timeout) seconds have passed. Objects that are ready are not read again; when all are
    ready at the first read the module makes one GET per object.
  - Ready is either O(condition) (an entry of C(status.conditions) with that type and status, as the Established
    condition of a CustomResourceDefinition) or O(state) (the value of C(status.state), as the NVIDIA operators
    set it).
  - An object that does not exist, or whose kind the API server does not serve, is not ready and is named in
    RV(missing).
  - Fails when an object is still not ready at the end, naming each with what it lacks, unless
    O(fail_on_not_ready=false), which only reports.
  - Every read is retried on HTTP 429, 5xx and a lost connection within O(retry_timeout) seconds.
  - Only reads; needs the C(kubernetes) Python library on the controller, as C(kubernetes.core) does.
options:
  objects:
    description:
      - The objects, each with C(apiVersion), C(kind), C(metadata.name) and, when namespaced,
        C(metadata.namespace), as the plan's manifests have them (other fields are ignored).
      - The filter C(gpufabric.rollout.k8s_crd_objects) makes them from CustomResourceDefinition names.
    type: list
    elements: dict
    required: true
  condition:
    description: Ready when C(status.conditions) holds an entry with this C(type) and C(status). Mutually exclusive
      with O(state).
    type: dict
  state:
    description: Ready when C(status.state) is this value. Mutually exclusive with O(condition).
    type: str
  timeout:
    description: Seconds to wait in all; V(0) reads each object once.
    type: float
    default: 120
  delay:
    description: Seconds between two reads of an object that is not ready.
    type: float
    default: 5
  fail_on_not_ready:
    description: Fail when an object is not ready at the end. With V(false) the module reports only.
    type: bool
    default: true
  retry_timeout:
    description: Seconds one read is retried in all on HTTP 429, 5xx and a lost connection.
    type: float
    default: 60
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpufabric.rollout.api_client
attributes:
  check_mode:
    description: Only reads, in check mode as in a real run.
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Wait for the CRDs to be established
  gpufabric.rollout.k8s_ready:
    kubeconfig: "{{ gpufabric_kubeconfig }}"
    objects: "{{ ['nicclusterpolicies.mellanox.com'] | gpufabric.rollout.k8s_crd_objects }}"
    condition: {type: Established, status: "True"}
    timeout: 600
  delegate_to: localhost

- name: Wait for the NicClusterPolicy to be ready
  gpufabric.rollout.k8s_ready:
    kubeconfig: "{{ gpufabric_kubeconfig }}"
    objects: [{apiVersion: mellanox.com/v1alpha1, kind: NicClusterPolicy, metadata: {name: nic-cluster-policy}}]
    state: ready
"""

RETURN = r"""
ready:
  description: Whether every object is ready.
  returned: always
  type: bool
objects:
  description: Each object as Kind/name (Kind/namespace/name), whether it was found and is ready, and why not.
  returned: always
  type: list
  elements: dict
  sample: [{"object": "NicClusterPolicy/nic-cluster-policy", "found": true, "ready": false,
            "why": "status {\"state\": \"notReady\"}"}]
missing:
  description: The objects that do not exist or whose kind is not served, as Kind/name.
  returned: always
  type: list
  elements: str
not_ready:
  description: The objects that are not ready at the end (the missing ones too), as Kind/name.
  returned: always
  type: list
  elements: str
"""

import copy

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_ready as _k8s_ready
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry
from ansible_collections.kubernetes.core.plugins.module_utils.ansiblemodule import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


def reader(client, retry_timeout):
    """read(ref) -> the object as a dict, or None when it or its kind does not exist."""
    resources = {}

    def read(ref):
        key = (ref["api_version"], ref["kind"])
        what = _k8s_ready.label(ref)
        if key not in resources:
            try:
                resources[key] = _k8s_retry.call(
                    lambda: client.resources.get(api_version=key[0], kind=key[1]), f"{what} (discovery)", retry_timeout
                )
            except Exception as exc:  # the kind is not served (yet): read again next round
                if not _k8s_retry.not_served(exc):
                    raise
                return None
        resource = resources[key]
        namespace = (ref.get("namespace") or None) if getattr(resource, "namespaced", False) else None
        try:
            obj = _k8s_retry.call(
                lambda: client.get(resource, name=ref["name"], namespace=namespace), what, retry_timeout
            )
        except Exception as exc:
            if _k8s_retry.status_of(exc) == 404:
                return None
            raise
        return obj.to_dict() if hasattr(obj, "to_dict") else obj

    return read


def main():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        objects=dict(type="list", elements="dict", required=True),
        condition=dict(type="dict"),
        state=dict(type="str"),
        timeout=dict(type="float", default=120),
        delay=dict(type="float", default=5),
        fail_on_not_ready=dict(type="bool", default=True),
        retry_timeout=dict(type="float", default=60),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=spec, supports_check_mode=True)
    p = module.params
    result = dict(changed=False, ready=False, objects=[], missing=[], not_ready=[])
    refs, bad = _k8s_ready.refs(p["objects"])
    bad += _k8s_ready.problems(p["condition"], p["state"], p["timeout"], p["delay"])
    if bad:
        module.fail_json(msg="; ".join(bad), **result)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    try:
        client = _k8s_retry.call(
            lambda: get_api_client(module=module).client, "the API server's discovery", p["retry_timeout"]
        )
        results = _k8s_ready.wait(
            reader(client, p["retry_timeout"]), refs, p["condition"], p["state"], p["timeout"], p["delay"]
        )
    except (CoreException, _k8s_retry.RetryError) as exc:
        module.fail_json(msg=f"could not reach the API server: {exc}", **result)
    except Exception as exc:  # a refused read (403, a malformed answer): one clear failure
        text = " ".join(str(getattr(exc, "body", None) or exc).split())[:400]
        module.fail_json(msg=f"could not read the objects: {text}", **result)
    result.update(
        ready=all(r["ready"] for r in results),
        objects=results,
        missing=[r["object"] for r in results if not r["found"]],
        not_ready=[r["object"] for r in results if not r["ready"]],
    )
    if p["fail_on_not_ready"] and not result["ready"]:
        module.fail_json(msg=_k8s_ready.failure_message(results, p["timeout"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
