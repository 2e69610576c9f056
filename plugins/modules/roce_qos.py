#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: roce_qos
short_description: Configure lossless RoCE QoS on ConnectX (mlx5) ports
version_added: 0.1.0
description:
  - Reads the current QoS state of each RDMA NIC port, compares it with the desired state and
    applies only what differs, then reads it back.
  - Manages trust mode, DSCP to priority map, PFC enable vector, ETS priority to TC map and
    TC bandwidths, default priority, receive buffers and cable length through one of two
    backends, C(mlnx_qos) (MOFED/DOCA mlnx-tools) or iproute2 C(dcb) (inbox kernel).
  - Manages per-priority ECN (DCQCN) enable for the reaction and notification points, the CNP
    DSCP and 802.1p priority (MOFED sysfs, else mlx5 debugfs), the verbs traffic class
    (MOFED), the RDMA-CM default RoCE ToS and mode (configfs), the netdev MTU and global
    pause (C(ethtool)).
  - Settings the host does not expose are reported as warnings, not failures.
  - The input is the C(interfaces) list of the node's RoCE plan, C(gpufabric_node_plan.roce), which
    the C(gpufabric.rollout.plan) role computes and checks; the boot-time re-apply script of the
    C(roce) role runs the same engine on the same plan.
author:
  - gpufabric.rollout contributors (@gpufabric)
attributes:
  check_mode:
    support: full
    description: Reads the state and reports what would change without changing anything.
  diff_mode:
    support: full
    description: Returns the per-interface state before and after.
extends_documentation_fragment:
  - gpufabric.rollout.sysroot
options:
  interfaces:
    description: Desired state per netdev, as planned in C(gpufabric_node_plan.roce.interfaces).
    type: list
    elements: dict
    required: true
    suboptions:
      netdev:
        description: Netdev name of the port.
        type: str
        required: true
      rdma_device:
        description: RDMA device of the port (for traffic class and RDMA-CM settings).
        type: str
      port:
        description: RDMA port number.
        type: int
        default: 1
      role:
        description: Discovery role of the NIC (informational).
        type: str
      rail:
        description: Rail index of the NIC (informational).
        type: int
      trust:
        description: Priority trust state.
        type: str
        choices: [dscp, pcp]
        default: dscp
      dscp2prio:
        description: DSCP (string key) to priority map entries to enforce.
        type: dict
        default: {}
      pfc:
        description: PFC enable flag (0 or 1) per priority 0..7.
        type: list
        elements: int
        required: true
      ecn:
        description: ECN enable per priority, C({enabled, priorities}).
        type: dict
      cnp_dscp:
        description: DSCP of congestion notification packets.
        type: int
      cnp_prio:
        description: 802.1p priority of congestion notification packets.
        type: int
      roce_tos:
        description: RDMA-CM default RoCE ToS.
        type: int
      traffic_class:
        description: Verbs default traffic class (MOFED C(tc/1/traffic_class)); null leaves it.
        type: int
      roce_mode:
        description: RDMA-CM default RoCE mode.
        type: str
        choices: ['RoCE v2', 'IB/RoCE v1']
      mtu:
        description: Netdev MTU.
        type: int
        required: true
      global_pause_off:
        description: Turn off global (802.3x) pause with ethtool.
        type: bool
        default: false
      default_prio:
        description: Default priority for untagged/unmatched traffic; null leaves it.
        type: int
      ets:
        description: ETS C({prio_tc, tsa, tc_bw}) lists of 8; null leaves ETS as it is.
        type: dict
      buffer_size:
        description: Receive buffer sizes in bytes, 8 entries; null leaves them.
        type: list
        elements: int
      prio2buffer:
        description: Receive buffer index per priority, 8 entries; null leaves them.
        type: list
        elements: int
      cable_len:
        description: Cable length in metres (PFC headroom); null leaves it.
        type: int
  backend:
    description:
      - Tool used for the DCB settings. V(auto) prefers C(mlnx_qos) when installed, else C(dcb).
    type: str
    choices: [auto, mlnx_qos, dcb]
    default: auto
notes:
  - Runtime settings do not survive a reboot or driver reload; the C(roce) role installs a boot
    service that re-applies the same plan.
"""

EXAMPLES = r"""
- name: Apply lossless RoCE to the rail NICs
  gpufabric.rollout.roce_qos:
    interfaces: "{{ gpufabric_node_plan.roce.interfaces }}"
    backend: "{{ gpufabric_node_plan.roce.backend }}"
    sysroot: "{{ gpufabric_node_plan.roce.sysroot }}"
"""

RETURN = r"""
backend:
  description: Backend used.
  returned: always
  type: str
  sample: mlnx_qos
interfaces:
  description:
    - Per netdev, the keys that differed, the actions taken, state before and after.
    - When applying an interface fails, the module fails with every interface handled before it (applied) and the
      failing one last, with C(failed), C(error), the C(actions) it had applied and what it reads C(after); C(changed)
      is true when any action was applied. Interfaces after it are not touched.
  returned: always
  type: list
  elements: dict
  sample:
    - netdev: ens1f0np0
      changed_keys: [pfc, trust]
      before: {trust: pcp, pfc: [0, 0, 0, 0, 0, 0, 0, 0]}
      after: {trust: dscp, pfc: [0, 0, 0, 1, 0, 0, 0, 0]}
      roce_active_mtu: 4096
failed_netdev:
  description: The netdev whose apply failed (then C(interfaces) ends with it).
  returned: on a failure while applying
  type: str
  sample: ens2f0np0
warnings_list:
  description: Settings this host does not expose.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.qos_engine import (
    ENGINE_ERRORS,
    PartialApply,
    QosError,
    run_plan_interfaces,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Host, Runner, Sysroot

IFACE_SPEC = dict(
    netdev=dict(type="str", required=True),
    rdma_device=dict(type="str"),
    port=dict(type="int", default=1),
    role=dict(type="str"),
    rail=dict(type="int"),
    trust=dict(type="str", choices=["dscp", "pcp"], default="dscp"),
    dscp2prio=dict(type="dict", default={}),
    pfc=dict(type="list", elements="int", required=True),
    ecn=dict(type="dict"),
    cnp_dscp=dict(type="int"),
    cnp_prio=dict(type="int"),
    roce_tos=dict(type="int"),
    traffic_class=dict(type="int"),
    roce_mode=dict(type="str", choices=["RoCE v2", "IB/RoCE v1"]),
    mtu=dict(type="int", required=True),
    global_pause_off=dict(type="bool", default=False),
    default_prio=dict(type="int"),
    ets=dict(type="dict"),
    buffer_size=dict(type="list", elements="int"),
    prio2buffer=dict(type="list", elements="int"),
    cable_len=dict(type="int"),
)


def run(params, io, check_mode):
    """The module's result for ``params``; QosError, CommandError or ParseError when it cannot."""
    for iface in params["interfaces"]:
        if len(iface["pfc"]) != 8 or any(v not in (0, 1) for v in iface["pfc"]):
            raise QosError(f"interfaces[{iface['netdev']}].pfc must list 8 values of 0 or 1")
    out = run_plan_interfaces(params["interfaces"], params["backend"], io, check_mode)
    diff = {side: {i["netdev"]: i[side] for i in out["interfaces"]} for side in ("before", "after")}
    return dict(
        changed=out["changed"],
        backend=out["backend"],
        interfaces=out["interfaces"],
        warnings_list=out["warnings"],
        diff=diff,
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="dict", required=True, options=IFACE_SPEC),
            backend=dict(type="str", choices=["auto", "mlnx_qos", "dcb"], default="auto"),
            sysroot=dict(type="path", default="/"),
        ),
        supports_check_mode=True,
    )
    io = Host(Sysroot(module.params["sysroot"]), Runner.for_module(module))
    try:
        result = run(module.params, io, module.check_mode)
    except PartialApply as exc:
        # What was applied before the failure stays on the NICs: say so, per interface, and changed.
        partial = exc.result
        module.fail_json(
            msg=str(exc),
            changed=partial["changed"],
            backend=partial["backend"],
            interfaces=partial["interfaces"],
            warnings_list=partial["warnings"],
            failed_netdev=partial["interfaces"][-1]["netdev"],
        )
    except ENGINE_ERRORS as exc:
        module.fail_json(msg=str(exc), changed=False, backend=None, interfaces=[], warnings_list=[])
    for warning in result["warnings_list"]:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
