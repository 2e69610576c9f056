#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_config
short_description: Apply a configuration patch to a Cumulus Linux switch through the NVUE REST API
version_added: 0.1.0
description:
  - Compares the settings that O(patch) names with the switch's applied configuration
    (C(GET /nvue_v1/?rev=applied)); when any differs or is missing, creates a revision, merges the patch into it
    (root C(PATCH)), applies it and waits until it is C(applied), then reads the applied configuration again and
    fails if the switch does not hold the patch.
  - Settings the patch does not name are neither compared nor changed (the PATCH merges).
  - In check mode nothing is created on the switch; C(changed) is true exactly when the apply would change a setting.
  - The collection's playbooks pass the plan's NVUE QoS of a leaf (C(gpufabric_plan.switches.leaves[NAME].qos)).
options:
  patch:
    description: The body of the root PATCH, the object tree of the C(nv set) commands.
    type: dict
    required: true
  apply_timeout:
    description: Seconds to wait for the revision to reach C(applied).
    type: int
    default: 180
extends_documentation_fragment:
  - gpufabric.rollout.nvue_api
attributes:
  check_mode:
    support: full
    description: Reads the applied configuration and reports what the apply would change; creates nothing.
  diff_mode:
    support: full
    description: The touched settings before and after, one line each (the path, a colon, the value).
notes:
  - Source of the revision flow - NVIDIA Cumulus Linux user guide, NVUE API,
    U(https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/System-Configuration/NVIDIA-User-Experience-NVUE/NVUE-API/).
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Apply the planned QoS of leaf-a
  gpufabric.rollout.nvue_config:
    switch: leaf-a
    address: 192.0.2.11
    user: "{{ gpufabric_switch_api_user }}"
    password: "{{ gpufabric_switch_api_password }}"
    ca_path: /etc/gpufabric/switch-ca.pem
    patch: "{{ gpufabric_plan.switches.leaves['leaf-a'].qos }}"
"""

RETURN = r"""
changes:
  description: Each setting of the patch the switch lacked or held otherwise (C(before) null when absent).
  returned: always
  type: list
  elements: dict
  sample: [{"path": "interface swp1 link mtu", "before": 1500, "after": 9216}]
revision:
  description: The revision created and applied; null when nothing changed or in check mode.
  returned: always
  type: str
  sample: changeset/cumulus/2026-12-06_11.30.00_0001
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue as _nvue
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue_api as _nvue_api


def main():
    module = AnsibleModule(
        argument_spec=dict(
            _nvue_api.ARGUMENT_SPEC,
            patch={"type": "dict", "required": True},
            apply_timeout={"type": "int", "default": 180},
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        api = _nvue_api.from_params(p)
        result = _nvue.converge(api, p["switch"], p["patch"], module.check_mode, p["apply_timeout"])
    except ValueError as exc:
        module.fail_json(msg=f"{p['switch']}: address: {exc}")
    except _nvue.NvueError as exc:
        module.fail_json(msg=str(exc))
    if module._diff:
        result["diff"] = _nvue.diff(p["switch"], result["changes"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
