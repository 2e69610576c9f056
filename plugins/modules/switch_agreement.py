#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: switch_agreement
short_description: Compare the leaves' running QoS with what the GPU nodes were planned with
version_added: 0.1.0
description:
  - For every planned leaf, reads its running configuration (an NVUE tree read from the API, passed in O(exports),
    or a file the network team exported under O(export_dir)) and compares it, port by port over the ports facing
    GPU nodes, with the hosts' fabric - PFC on the lossless priority and not on the CNPs', DSCP trust, the RoCE and
    CNP DSCPs to their priorities, ECN on the lossless traffic class and its thresholds, and the port MTU.
  - Returns every finding (switch, ports, nodes, setting, expected and found values) and the leaves it could not
    read; it does not fail on findings, the caller decides.
options:
  leaves:
    description: The plan's leaves, C(gpufabric_plan.switches.leaves).
    type: dict
    required: true
  exports:
    description: Running configuration per leaf name, as read from the switch's API (an NVUE tree).
    type: dict
    default: {}
  export_dir:
    description:
      - Directory of exported configurations, read for the leaves not in O(exports) - C(LEAF.json) for NVUE
        (C(nv config show -o json)), C(LEAF.config_db.json) for SONiC (C(config_db.json)).
    type: path
extends_documentation_fragment:
  - gpufabric.rollout.read_only
attributes:
  platform:
    platforms: posix
    support: full
    description: The controller (the exports are files there or answers of the switches' APIs).
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Check the leaves against the hosts' fabric from the network team's exports
  gpufabric.rollout.switch_agreement:
    leaves: "{{ gpufabric_plan.switches.leaves }}"
    export_dir: /srv/switch-exports
  register: agreement
"""

RETURN = r"""
ok:
  description: True when every leaf was read and agrees.
  returned: always
  type: bool
findings:
  description: Each disagreement, ports that share a setting, expected and found value joined.
  returned: always
  type: list
  elements: dict
  sample:
    - switch: leaf-a
      port: swp1-2
      nodes: [gpu-node-01, gpu-node-02]
      setting: MTU
      expected: ">= 9000 (gpufabric_fabric.mtu)"
      found: "1500"
      message: "leaf-a swp1-2 (gpu-node-01, gpu-node-02): MTU is 1500, the hosts need >= 9000 (gpufabric_fabric.mtu)"
checked:
  description: The leaves that were read.
  returned: always
  type: list
  elements: str
missing:
  description: The leaves without a running configuration, each with why.
  returned: always
  type: list
  elements: str
sources:
  description: Where each leaf's running configuration came from (C(api) or the file).
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import agreement as _agreement


def main():
    module = AnsibleModule(
        argument_spec={
            "leaves": {"type": "dict", "required": True},
            "exports": {"type": "dict", "default": {}},
            "export_dir": {"type": "path"},
        },
        supports_check_mode=True,
    )
    leaves, exports, export_dir = module.params["leaves"], dict(module.params["exports"]), module.params["export_dir"]
    sources = {name: "api" for name in exports}
    reasons = {}
    for name, leaf in sorted(leaves.items()):
        if name in exports:
            continue
        if not export_dir:
            reasons[name] = (
                "not read: neither from its API (set gpufabric_switch_api_user and gpufabric_switch_api_password) "
                "nor from an export (gpufabric_switch_export_dir)"
                if leaf["os"] == "nvue"
                else f"not read: a SONiC leaf is checked from its export only (gpufabric_switch_export_dir/"
                f"{_agreement.export_file(name, leaf['os'])})"
            )
            continue
        path = os.path.join(export_dir, _agreement.export_file(name, leaf["os"]))
        try:
            with open(path, encoding="utf-8") as handle:
                exports[name] = json.load(handle)
            sources[name] = path
        except OSError as exc:
            reasons[name] = f"no export at {path} ({exc.strerror})"
        except ValueError as exc:
            reasons[name] = f"{path} is not JSON ({exc})"
    result = _agreement.check(leaves, exports)
    result["missing"] = [f"{name}: {reasons.get(name, 'not read')}" for name in result["missing"]]
    module.exit_json(changed=False, sources=sources, **result)


if __name__ == "__main__":
    main()
