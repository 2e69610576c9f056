#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pcie_acs
short_description: Disable PCIe ACS redirect on the bridges above GPUs and NICs
version_added: 0.1.0
description:
  - Finds the PCIe bridges between each given endpoint (GPU or NIC function) and its host
    bridge from the sysfs device path, reads each bridge's ACS Control register with
    C(setpci -s BDF ECAP_ACS+0x6.w) and clears the redirect bits (P2P request redirect 0x04 and
    completion redirect 0x08 by default), so GPUDirect peer-to-peer traffic stays below the
    PCIe switch instead of going up to the root complex.
  - One setpci call reads every bridge (an operation group per bridge), one writes those that
    differ and one reads them back; a bridge without ACS ends a setpci call, so the bridges after
    it are read in the next one.
  - Bridges without an ACS capability are reported and skipped.
  - Refuses to run on a virtual machine, where ACS must stay enabled.
  - The setting is lost at reboot; the C(roce) role's boot service re-applies it.
author:
  - gpufabric.rollout contributors (@gpufabric)
attributes:
  check_mode:
    support: full
    description: Reads the registers and reports what would be written.
  diff_mode:
    support: full
    description: Returns each bridge's ACS Control value before and after.
  platform:
    platforms: posix
    support: full
    description: Bare-metal Linux hosts with pciutils C(setpci).
extends_documentation_fragment:
  - gpufabric.rollout.sysroot
options:
  endpoints:
    description: PCI addresses (DDDD:BB:DD.F) of the GPUs and NICs whose upstream bridges are changed.
    type: list
    elements: str
    required: true
  clear_mask:
    description: ACS Control bits to clear (linux pci_regs.h PCI_ACS_*; 0x0c = RR | CR).
    type: int
    default: 12
  virtualized:
    description: The host is a virtual machine (from discovery); the module then refuses.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Disable ACS redirect above the rail GPUs and NICs
  gpufabric.rollout.pcie_acs:
    endpoints: "{{ ansible_facts.gpufabric_topology.rails | map(attribute='gpu_bdf') | list }}"
    virtualized: "{{ ansible_facts.gpufabric_topology.virtualized }}"
"""

RETURN = r"""
bridges:
  description: Per bridge, the ACS Control value before and after (4 hex digits) and whether redirect is still on.
  returned: always
  type: list
  elements: dict
  sample:
    - {bdf: "0000:16:00.0", before: "001d", after: "0011", redirect: false}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.pcie_acs import (
    AcsError,
    run_acs,
    upstream_bridges,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import CommandError, Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError


def run(params, sysroot, runner, check_mode):
    """The module's result for ``params``; AcsError, CommandError or ParseError when it cannot."""
    if params["virtualized"]:
        raise AcsError(
            "refusing to disable ACS redirect on a virtual machine: the hypervisor relies on ACS for "
            "isolation; enable ATS on the NIC instead"
        )
    if not 0 < params["clear_mask"] <= 0x7F:
        raise AcsError(f"clear_mask must be in 1..0x7f, got {params['clear_mask']}")
    if not runner.which("setpci"):
        raise AcsError("setpci (pciutils) is not installed")
    bridges = upstream_bridges(sysroot, params["endpoints"])
    out = run_acs(bridges, params["clear_mask"], runner, check_mode)
    diff = {side: {b["bdf"]: b[side] for b in out["bridges"]} for side in ("before", "after")}
    return dict(changed=out["changed"], bridges=out["bridges"], diff=diff)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoints=dict(type="list", elements="str", required=True),
            clear_mask=dict(type="int", default=12),
            virtualized=dict(type="bool", default=False),
            sysroot=dict(type="path", default="/"),
        ),
        supports_check_mode=True,
    )
    sysroot = Sysroot(module.params["sysroot"])
    try:
        result = run(module.params, sysroot, Runner.for_module(module), module.check_mode)
    except (AcsError, CommandError, ParseError, OSError) as exc:
        module.fail_json(msg=str(exc), changed=False, bridges=[])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
