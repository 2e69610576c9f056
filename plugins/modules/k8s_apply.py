#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_apply
short_description: Server-side apply of objects one by one, each request retried within a bound, conflicts named
version_added: 0.1.0
description:
  - Applies each object of O(objects) with server-side apply (field manager O(field_manager)), in order, with one
    API client. An object the API server does not take does not stop the others; the module then fails naming each
    object that was not applied and why.
  - Every request is retried on HTTP 429, 5xx, an optimistic-lock 409 and a lost connection, with exponential
    backoff (honouring Retry-After), for at most O(retry_timeout) seconds; then the object is named in the failure.
  - Conflicts are not forced. A field that another field manager (a C(kubectl edit), another tool or controller)
    holds with another value is named with that manager. With O(conflicts=fail) the object is left as it is and
    the module fails; with O(conflicts=take) the object is applied again with force and the module names whose
    fields it took.
  - An object is reported changed when its content (without status and what the API server stamps) differs after
    the apply. In check mode every apply is a dry run on the API server.
  - With O(prune_kinds), after every object was applied, the objects this collection made earlier for
    O(component) of O(instance) (found by their labels among the prune kinds) that O(objects) no longer has are
    deleted, with the same client and the same retries. A kind the API server does not serve has nothing to
    prune. In check mode nothing is deleted and the objects a real run deletes are named in RV(pruned).
  - Needs the C(kubernetes) Python library on the controller, as C(kubernetes.core) does.
options:
  objects:
    description: The objects, each with apiVersion, kind and metadata.name (and metadata.namespace when namespaced).
    type: list
    elements: dict
    required: true
  field_manager:
    description: The field manager the objects are applied as.
    type: str
    required: true
  conflicts:
    description: What a field that another field manager holds does (C(gpufabric_field_conflicts)).
    type: str
    choices: [fail, take]
    default: fail
  component:
    description:
      - What the objects are, for messages.
      - With O(prune_kinds), the component whose objects are pruned (the C(gpufabric.io/component) label).
    type: str
    default: objects
  apply:
    description:
      - Whether to apply O(objects). With V(false) they are only the plan that O(prune_kinds) prunes against, as
        in a check run before the objects' kinds are served.
    type: bool
    default: true
  prune_kinds:
    description:
      - The kinds the component can ever create, each with C(version), C(resources) (plural names) and
        C(api_group) for a custom kind, and C(namespace) to list it in that namespace only.
      - Empty, nothing is pruned.
    type: list
    elements: dict
    default: []
  instance:
    description:
      - The deployment (C(gpufabric_instance)) whose objects are pruned (the C(gpufabric.io/instance) label). Another
        instance's objects are never touched.
      - Required with O(prune_kinds).
    type: str
  retry_timeout:
    description: Seconds one request is retried in all on transient answers.
    type: float
    default: 60
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpufabric.rollout.api_client
attributes:
  check_mode:
    description: Every apply is a dry run on the API server (dryRun=All); what would change is reported.
    support: full
  diff_mode:
    description: Each changed object before and after (without status and server-stamped metadata).
    support: full
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Apply the rail networks
  gpufabric.rollout.k8s_apply:
    kubeconfig: "{{ gpufabric_kubeconfig }}"
    objects: "{{ gpufabric_plan.network.objects.rdma_networks }}"
    field_manager: gpufabric-rollout
  delegate_to: localhost
"""

RETURN = r"""
applied:
  description: The objects (Kind/namespace/name) that changed (in check mode, would change).
  returned: always
  type: list
  elements: str
unchanged:
  description: How many objects were already as given.
  returned: always
  type: int
taken:
  description: With O(conflicts=take), one line per object whose fields were taken from another manager.
  returned: always
  type: list
  elements: str
conflicts:
  description: Each object refused for a field-manager conflict, with the fields and the managers that hold them.
  returned: always
  type: list
  elements: dict
pruned:
  description: The objects (Kind/namespace/name) that left the plan and were deleted (in check mode, would be).
  returned: always
  type: list
  elements: str
"""

import copy

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_apply_outcome as _outcome
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_prune as _k8s_prune
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry
from ansible_collections.kubernetes.core.plugins.module_utils.ansiblemodule import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


def main():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        objects=dict(type="list", elements="dict", required=True),
        field_manager=dict(type="str", required=True),
        conflicts=dict(type="str", choices=list(_outcome.MODES), default="fail"),
        component=dict(type="str", default="objects"),
        retry_timeout=dict(type="float", default=60),
        apply=dict(type="bool", default=True),
        prune_kinds=dict(type="list", elements="dict", default=[]),
        instance=dict(type="str"),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=spec, supports_check_mode=True)
    p = module.params
    result = dict(changed=False, applied=[], unchanged=0, taken=[], conflicts=[], pruned=[])
    if p["prune_kinds"] and not p["instance"]:
        module.fail_json(msg="instance is required with prune_kinds (gpufabric_instance)", **result)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    try:
        # The client reads the API server's discovery when it is made: retried like every request.
        client = _k8s_retry.call(
            lambda: get_api_client(module=module).client, "the API server's discovery", p["retry_timeout"]
        )
        objects = p["objects"] if p["apply"] else []
        results = _outcome.apply_all(
            client, objects, p["field_manager"], p["conflicts"], module.check_mode, p["retry_timeout"]
        )
    except _outcome.ApplyError as exc:
        module.fail_json(msg=str(exc), **result)
    except (CoreException, _k8s_retry.RetryError) as exc:
        module.fail_json(msg=f"could not reach the API server: {exc}", **result)
    changed = [r for r in results if r["changed"]]
    # What was applied is in the result from here on, also when the prune below fails.
    result.update(
        changed=bool(changed),
        applied=[r["ref"] for r in changed],
        unchanged=sum(1 for r in results if not r["changed"] and not r["error"] and not r["conflict"]),
        taken=_outcome.taken_message(results),
        conflicts=[{"object": r["ref"], "held": r["conflict"]} for r in results if r["conflict"]],
    )
    failure = _outcome.failure_message(results, p["component"])
    pruned = {"pruned": [], "found": [], "errors": []}
    # Nothing is pruned after a failed apply, as a failed apply task ended the role before.
    if p["prune_kinds"] and not failure:
        listing = f"could not list what an earlier run made for {p['component']} (nothing was deleted)"
        try:
            pruned = _k8s_prune.prune(
                client,
                p["prune_kinds"],
                p["objects"],
                p["component"],
                p["instance"],
                module.check_mode,
                p["retry_timeout"],
            )
        except _k8s_publish.PublishError as exc:
            module.fail_json(msg=f"{p['component']}: {exc}", **result)
        except (CoreException, _k8s_retry.RetryError) as exc:
            module.fail_json(msg=f"{listing}: {exc}", **result)
        except Exception as exc:  # a refused listing (403, a malformed answer)
            text = " ".join(str(getattr(exc, "body", None) or exc).split())[:400]
            module.fail_json(msg=f"{listing}: {text}", **result)
    result.update(changed=bool(changed) or bool(pruned["pruned"]), pruned=pruned["pruned"])
    if module._diff and (changed or pruned["found"]):
        result["diff"] = [
            {"before_header": r["ref"], "after_header": r["ref"], "before": r["before"] or {}, "after": r["after"]}
            for r in changed
        ] + [
            {"before_header": what, "after_header": f"{what} (deleted)", "before": obj, "after": {}}
            for what, obj in zip(pruned["pruned"], pruned["found"])
        ]
    for line in result["taken"]:
        module.warn(line)
    failure = failure or _k8s_prune.failure_message(pruned["errors"], p["component"])
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
