#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: lldp_neighbours
short_description: Read the LLDP neighbour (switch and port) of each rail netdev from lldpd
version_added: "0.1.0"
description:
  - Runs C(lldpctl -f json) (lldpd's client) and returns, per local interface, the neighbour lldpd has heard on it
    (the switch's system name, its port ID and port description), read with the collection's LLDP parser
    (module_utils/switch/lldp.py).
  - When lldpd is not installed or not running, returns RV(source=none) with the reason instead of failing, so that the
    cabling check names every rail NIC as having no LLDP source rather than passing it.
  - Where a NIC's firmware runs its own LLDP agent, that agent may consume the switch's LLDP frames so that lldpd on
    the host hears nothing; docs/switches.md says what to set. This module reads lldpd only.
  - Changes nothing.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  interfaces:
    description:
      - The netdevs whose neighbours to return (the node's rail netdevs). Empty returns every interface lldpd
        reports.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufabric.rollout.read_only
"""

EXAMPLES = r"""
- name: Read the LLDP neighbours of the rail netdevs
  gpufabric.rollout.lldp_neighbours:
    interfaces: "{{ gpufabric_node_plan.roce.interfaces | map(attribute='netdev') | list }}"
  register: lldp
"""

RETURN = r"""
source:
  description: Where the neighbours came from, C(lldpd), or C(none) when no LLDP source could be read.
  returned: always
  type: str
  sample: lldpd
reason:
  description: Why there is no LLDP source (empty when RV(source=lldpd)).
  returned: always
  type: str
  sample: "lldpctl not found: install and start lldpd on the GPU node"
lldp:
  description: C(lldpctl -f json) output as parsed JSON (null without a source); the cabling check reads it.
  returned: always
  type: dict
  sample: {"lldp": {"interface": [{"enp24s0np0": {"chassis": {"leaf-a": {}}, "port": {"id": {"value": "swp1"}}}}]}}
neighbours:
  description: Per requested interface (every reported one without O(interfaces)), the neighbour heard; an
    interface lldpd reports nothing for is absent.
  returned: always
  type: dict
  sample: {"enp24s0np0": {"switch": "leaf-a", "port": "swp1", "descr": "swp1"}}
"""

import json
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp as _lldp

COMMAND = ("-f", "json")


def read(interfaces: List[str], runner: Runner) -> Dict[str, Any]:
    """The module's result (see RETURN); raises LldpError on output that is not lldpctl's JSON."""
    lldpctl = runner.which("lldpctl")
    if not lldpctl:
        return _none("lldpctl not found: install and start lldpd on the GPU node")
    rc, out, err = runner.run([lldpctl, *COMMAND])
    if rc != 0:
        said = (err or out or "").strip().splitlines()
        return _none(f"lldpctl -f json exited {rc}" + (f": {said[0]}" if said else "") + " (is lldpd running?)")
    try:
        export = json.loads(out)
    except ValueError as exc:
        raise _lldp.LldpError(f"lldpctl -f json printed no JSON ({exc})") from exc
    heard = _lldp.neighbours(export)
    if interfaces:
        heard = {name: heard[name] for name in interfaces if name in heard}
    return {"source": "lldpd", "reason": "", "lldp": export, "neighbours": heard}


def _none(reason: str) -> Dict[str, Any]:
    return {"source": "none", "reason": reason, "lldp": None, "neighbours": {}}


def main() -> None:
    module = AnsibleModule(
        argument_spec={"interfaces": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True,
    )
    try:
        result = read(module.params["interfaces"], Runner.for_module(module))
    except _lldp.LldpError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
