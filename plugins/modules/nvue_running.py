#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_running
short_description: Read a Cumulus Linux switch's applied configuration through the NVUE REST API
version_added: 0.1.0
description:
  - Returns the applied configuration tree (C(GET /nvue_v1/?rev=applied)), the input of the agreement check
    (gpufabric.rollout.switch_agreement). Only reads; an NVUE user that may read the configuration is enough.
extends_documentation_fragment:
  - gpufabric.rollout.nvue_api
  - gpufabric.rollout.read_only
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Read leaf-a's applied configuration
  gpufabric.rollout.nvue_running:
    switch: leaf-a
    address: 192.0.2.11
    user: "{{ gpufabric_switch_api_user }}"
    password: "{{ gpufabric_switch_api_password }}"
  register: leaf_a
"""

RETURN = r"""
tree:
  description: The applied configuration, as C(nv config show -o json) has it under C(set).
  returned: success
  type: dict
  sample: {"qos": {"roce": {"enable": "on", "mode": "lossless"}}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue as _nvue
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue_api as _nvue_api


def main():
    module = AnsibleModule(argument_spec=dict(_nvue_api.ARGUMENT_SPEC), supports_check_mode=True)
    p = module.params
    try:
        api = _nvue_api.from_params(p)
        tree = _nvue.running(api)
    except ValueError as exc:
        module.fail_json(msg=f"{p['switch']}: address: {exc}")
    except _nvue.NvueError as exc:
        module.fail_json(msg=str(exc))
    if not isinstance(tree, dict):
        module.fail_json(msg=f"{p['switch']}: GET /nvue_v1/?rev=applied did not answer with an object")
    module.exit_json(changed=False, tree=tree)


if __name__ == "__main__":
    main()
