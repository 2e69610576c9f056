#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: topology_facts
short_description: Discover GPUs, RDMA NICs, PCIe tree, NUMA, path classes and rails from sysfs
version_added: 0.1.0
description:
  - Walks sysfs and procfs under O(sysroot) and returns the node's GPU/NIC topology as the fact
    C(gpufabric_topology) (schema in docs/topology-facts.md of the collection).
  - GPUs with ids, model, NUMA node, local CPUs, PCIe link speed and width (current and max) and
    bound driver; RDMA NICs with model, PF/VF, SR-IOV totals, netdevs, RDMA device, per-port link
    layer, state, rate, MTU and the RoCE v2 IPv4 GID index computed from C(gid_attrs).
  - PCIe host bridges and bridges (root ports, switch ports, from the PCIe capability in config
    space), ACS control per bridge, IOMMU state.
  - The C(nvidia-smi topo -m) class (PIX, PXB, PHB, NODE, SYS) of every GPU x NIC and GPU x GPU
    pair, NVLink counts when the C(nvidia-smi topo -m) matrix is available.
  - A 1:1 GPU to NIC rail assignment by matching, and warnings (ACS redirect, NUMA mismatch, port
    down, RoCE v2 GID missing, degraded PCIe link). Hardware only, the NCCL settings these rails
    lead to are planned by the plan (C(gpufabric_node_plan.nccl)).
  - Changes nothing.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  sysroot:
    description:
      - Root under which C(sys/) and C(proc/) are read. V(/) on a live node; an unpacked
        snapshot (from C(playbooks/snapshot.yml)) elsewhere.
      - A missing, unreadable or non-sysfs directory fails with a message naming it.
    type: path
    default: /
  nvidia_smi:
    description:
      - Where the C(nvidia-smi topo -m) matrix (NVLink counts) comes from.
      - V(auto) reads C(<sysroot>/nvidia-smi-topo-m.txt) when it exists, otherwise runs
        C(nvidia-smi topo -m) when O(sysroot) is V(/) and the tool is installed.
      - V(file) reads only the snapshot file; V(command) only runs the tool; V(never) uses
        neither (GPU x GPU classes then come from PCIe alone).
    type: str
    choices: [auto, file, command, never]
    default: auto
  storage_nics:
    description:
      - RDMA device names, netdev names or PCI addresses of NICs to keep out of the rails
        (their role becomes C(storage)).
    type: list
    elements: str
    default: []
  rail_nics:
    description:
      - RDMA device names, netdev names or PCI addresses of NICs kept in the GPU matching
        pool although they sit on a CPU root port or are of another speed class (by default
        those are classified out of the rails).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufabric.rollout.read_only
  - gpufabric.rollout.sysroot
  - gpufabric.rollout.facts
notes:
  - Run as root for complete PCI config spaces; non-root reads stop at 64 bytes, and port types
    are then inferred from the tree and ACS state is unknown.
seealso:
  - name: Topology facts schema
    description: docs/topology-facts.md in the collection.
    link: https://github.com/gpufabric/rollout/blob/main/docs/topology-facts.md
"""

EXAMPLES = r"""
- name: Discover the GPU/NIC topology of the node
  gpufabric.rollout.topology_facts:

- name: Discover the topology of a captured snapshot
  gpufabric.rollout.topology_facts:
    sysroot: /var/lib/gpufabric-lab/sysroot
  register: topo

- name: Show the rails
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpufabric_topology.rails }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added.
  returned: success
  type: dict
  contains:
    gpufabric_topology:
      description:
        - The discovered topology. Keys schema_version, sysroot, virtualized, cpu, system,
          iommu, numa_nodes, gpus, nics, pcie, paths, rails, rails_excluded, rail_pool_out, warnings; see
          docs/topology-facts.md.
      returned: success
      type: dict
      sample:
        schema_version: 1
        rails:
          - {rail: 0, gpu: GPU0, gpu_bdf: "0000:19:00.0", nic: mlx5_0, nic_bdf: "0000:18:00.0",
             netdev: enp24s0np0, path: PIX}
        warnings:
          - {class: port_down, device: mlx5_7/1, message: "mlx5_7/1 (enp170s0np0) is DOWN / Disabled"}
report:
  description: Human-readable report (GPUs, NICs, path classes, rails, warnings).
  returned: success
  type: str
nvidia_smi_source:
  description: Where the nvidia-smi matrix came from (C(file), C(command) or C(none)).
  returned: success
  type: str
  sample: file
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology_read as _topology_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.report import format_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import TopologyError
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError


def run(params, runner):
    """The module's result (without changed) for ``params``; TopologyError or ParseError when it cannot."""
    facts, source = _topology_read.read(params, runner)
    return {
        "ansible_facts": {"gpufabric_topology": facts},
        "report": format_report(facts),
        "nvidia_smi_source": source,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysroot=dict(type="path", default="/"),
            nvidia_smi=dict(type="str", default="auto", choices=["auto", "file", "command", "never"]),
            storage_nics=dict(type="list", elements="str", default=[]),
            rail_nics=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    error = None
    result = dict(changed=False)
    try:
        result.update(run(module.params, Runner.for_module(module)))
    except (TopologyError, ParseError) as exc:
        error = str(exc)
    except OSError as exc:
        error = f"cannot read the sysroot {module.params['sysroot']}: {exc}"
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
