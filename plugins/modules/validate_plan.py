#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_plan
short_description: Plan the validate role's measurements of this run, and make the NCCL Pods' SSH key pair
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin); used by the C(gpufabric.rollout.validate) role.
  - With O(part=rdma_ring), this node's perftest runs in a ring over O(nodes). Node i's rail r NIC sends
    to node i+1's rail r NIC; with two nodes, both directions. Ports are O(base_port) + 2 x rail, plus 1
    for GPU memory.
  - With O(part=nccl_jobs), the NCCL Jobs of the run from the cluster plan's O(network) (and O(dra) in
    dra mode), one Job per node group with two or more of the run's nodes (O(hosts)).
  - With O(part=ssh_keypair), a new Ed25519 key pair for the NCCL Pods of this run. Run it with
    C(no_log), since the result holds the private key.
options:
  part:
    description: What to plan.
    type: str
    required: true
    choices: [rdma_ring, nccl_jobs, ssh_keypair]
  nodes:
    description: For O(part=rdma_ring), the run's nodes in ring order (their inventory names).
    type: list
    elements: str
  topologies:
    description: For O(part=rdma_ring), each node's C(gpufabric_topology) facts, by inventory name.
    type: dict
  memories:
    description: For O(part=rdma_ring), the memory kinds each rail is measured with.
    type: list
    elements: str
    choices: [host, gpu]
    default: [host]
  base_port:
    description: For O(part=rdma_ring), the first perftest port.
    type: int
    default: 18515
  tool:
    description: For O(part=rdma_ring), the perftest binary.
    type: str
    default: ib_write_bw
  size:
    description: For O(part=rdma_ring), the message size in bytes.
    type: int
    default: 1048576
  duration:
    description: For O(part=rdma_ring), seconds per run; 0 runs perftest's default iteration count instead.
    type: int
    default: 5
  network:
    description: For O(part=nccl_jobs), the cluster plan's C(gpufabric_plan.network).
    type: dict
  dra:
    description:
      - For O(part=nccl_jobs), the cluster plan's C(gpufabric_plan.dra) (C(gpufabric_k8s_device_allocation=dra));
        unset or null with the device plugins.
      - With it, each Job's Pods claim their node group's full-node ResourceClaimTemplate, copied into the Jobs'
        namespace, instead of asking for the GPU and rail resources and attaching the rails' NADs.
    type: dict
  hosts:
    description: For O(part=nccl_jobs), the run's nodes, each Kubernetes Node name mapped to its inventory name.
    type: dict
  options:
    description:
      - For O(part=nccl_jobs), the NCCL test's options (image, binary, sizes, iterations, timeout, SSH port,
        namespace).
    type: dict
attributes:
  check_mode:
    support: full
    description: Only plans; the same in check mode.
extends_documentation_fragment:
  - gpufabric.rollout.controller
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Plan this node's perftest runs in a ring over the play's nodes
  gpufabric.rollout.validate_plan:
    part: rdma_ring
    nodes: "{{ ansible_play_hosts }}"
    topologies: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
           | map('extract', hostvars, ['ansible_facts', 'gpufabric_topology']))) }}
  register: __validate_rdma_plan

- name: Make this run's SSH key pair for the NCCL Pods
  gpufabric.rollout.validate_plan:
    part: ssh_keypair
  register: __validate_nccl_key
  no_log: true
"""

RETURN = r"""
servers:
  description: For O(part=rdma_ring), this node's perftest servers (rail, device, peer, memory, port, argv).
  returned: O(part=rdma_ring)
  type: list
  elements: dict
clients:
  description: For O(part=rdma_ring), this node's perftest clients (as O(part=rdma_ring) servers, plus server).
  returned: O(part=rdma_ring)
  type: list
  elements: dict
rails_not_run:
  description: For O(part=rdma_ring), the rails of this node not measured, each with its reason.
  returned: O(part=rdma_ring)
  type: list
  elements: dict
jobs:
  description: For O(part=nccl_jobs), the NCCL Jobs with their objects, nodes and environment.
  returned: O(part=nccl_jobs)
  type: list
  elements: dict
not_run:
  description: For O(part=nccl_jobs), why node groups get no Job (fewer than two of their nodes in the run).
  returned: O(part=nccl_jobs)
  type: list
  elements: str
private_key:
  description: For O(part=ssh_keypair), the private key in OpenSSH format.
  returned: O(part=ssh_keypair)
  type: str
public_key:
  description: For O(part=ssh_keypair), the public key line.
  returned: O(part=ssh_keypair)
  type: str
"""
