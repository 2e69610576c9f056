#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan
short_description: Check the collection's variables and compute the plan every role reads
version_added: 0.1.0
description:
  - An action plugin, used by the C(gpufabric.rollout.plan) role in C(playbooks/plan.yml). It runs on the controller;
    only O(part=check_node) with O(gather_subset) or O(read) runs a module on the node (M(ansible.builtin.setup), or
    M(gpufabric.rollout.plan_facts) with O(read)).
  - With O(part=check_node) or O(part=check_cluster) it checks every collection-wide variable (the plan role's
    C(node_intent) or C(cluster_intent) argument spec) and every variable of the listed roles against their
    argument specs, plus the ranges and cross-field rules of the collection. Unknown keys and unknown variables
    with a collection prefix are refused with the closest known name. The checked values, defaults filled in,
    are returned as RV(gpufabric_intent); with O(part=check_node) also the package repository indexes the node's
    plan reads (RV(index_reads)).
  - With O(part=cluster) it checks what must agree between GPU nodes, computes the cluster plan
    (RV(gpufabric_plan)), stores each node's record under O(plan_dir)C(/discovery) and writes C(plan.json) and
    C(summary.txt) to O(plan_dir). Nodes outside the run are planned from their stored record.
  - With O(part=upgrade) (C(playbooks/upgrade.yml)) it checks the upgrade variables (the plan role's C(upgrade)
    entry point) and plans the rolling upgrade from every node's plan (fact C(gpufabric_upgrade_plan)), that is the
    nodes to change and what changes on each, the batches, the cluster phase and its upgrade paths (the version-skew
    rules of C(roles/plan/files/version_skew.yml)), the nodes whose device allocation moves
    (C(gpufabric_k8s_device_allocation) against their Node's labels; the batches then go node group by node group),
    and the summary C(--check) prints.
  - Every refusal names the variable, the value and what is allowed; all problems are reported at once.
  - The results are return values, not facts, so that they never reach a fact cache (AWX jobs, C(fact_caching) in
    C(ansible.cfg)), where a later run would find a stale plan; the plan role keeps them for the run with
    M(ansible.builtin.set_fact). The node's own plan is the lookup C(gpufabric.rollout.node_plan), which reads
    the node check's result.
options:
  part:
    description: What to do.
    type: str
    required: true
    choices: [check_node, check_cluster, cluster, upgrade]
  roles:
    description: Roles whose variables are checked (their C(main) argument spec entry point).
    type: list
    elements: str
    default: []
  gather_subset:
    description:
      - For O(part=check_node), the setup collectors to run first, as O(ansible.builtin.setup#module:gather_subset),
        in the same task. The check then sees their facts among the node's variables, and they are returned as
        M(ansible.builtin.setup) returns them. Empty, nothing is gathered.
    type: list
    elements: str
    default: []
  read:
    description:
      - For O(part=check_node), also read what the node's plan needs (M(gpufabric.rollout.plan_facts)), in the same
        module call as the setup facts of O(gather_subset), before the check, with plan_facts' arguments rendered
        from the node's variables as they stand (C(gpufabric_sysroot), C(topology_storage_nics),
        C(topology_rail_nics), C(topology_nvidia_smi), C(gpudirect_rdma_method), C(gpudirect_rdma_cuda_version)).
        Where the check accepts other values, the node is read again with them; where plan_facts refuses a value, the
        setup facts are gathered alone and the check names the variable. Its facts are returned with setup's.
    type: bool
    default: false
  facts:
    description:
      - For O(part=check_node) with O(gather_subset), the setup facts to return
        (O(ansible.builtin.setup#module:filter)); the others are left on the node.
    type: list
    elements: str
    default: []
  nodes:
    description:
      - For O(part=cluster) and O(part=upgrade), the inventory hosts of every GPU node (not only those in this run).
    type: list
    elements: str
  run_nodes:
    description:
      - For O(part=cluster), the inventory hosts this run can have read (those C(--limit) selects). The variables of
        a node of O(nodes) not among them are not read; it is planned from its stored record. Omitted, every node's
        variables are read.
    type: list
    elements: str
  hosts:
    description: For O(part=upgrade), the GPU nodes of this run (the others are left out of the batches).
    type: list
    elements: str
  cluster_nodes:
    description:
      - For O(part=upgrade), the cluster's Node objects (kubernetes.core.k8s_info C(resources)), whose annotations
        tell the nodes a failed upgrade left cordoned and whose labels their device allocation; omit without a
        cluster (render mode).
    type: list
    elements: dict
  current:
    description: For O(part=upgrade), the chart versions the cluster runs, C({network_operator, gpu_operator}).
    type: dict
  plan_dir:
    description:
      - For O(part=cluster) and O(part=upgrade), the controller directory for the plan files and stored node records.
    type: path
  stored_discovery:
    description: For O(part=cluster) and O(part=upgrade), plan nodes outside this run from their stored record.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Only reads; the plan files are written in check mode too, as a record of the run.
extends_documentation_fragment:
  - gpufabric.rollout.controller
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Gather two setup facts and check the node's variables with them
  gpufabric.rollout.plan:
    part: check_node
    roles: [topology, roce, nccl_config]
    gather_subset: ['!all', '!min', distribution, platform]
    facts: [ansible_distribution, ansible_kernel]
  register: __plan_read

- name: Read the node (setup facts, topology, GPU driver, packages, RDMA stack) and check its variables
  gpufabric.rollout.plan:
    part: check_node
    roles: [topology, gpudirect_rdma]
    read: true
    gather_subset: ['!all', '!min', distribution, platform]
    facts: [ansible_distribution, ansible_kernel]
  register: __plan_check_node

- name: Check the node's variables
  gpufabric.rollout.plan:
    part: check_node
    roles: [topology, roce, nccl_config]
  register: __plan_check

- name: Keep the checked variables for this run (set_fact never reaches the fact cache)
  ansible.builtin.set_fact:
    gpufabric_intent: "{{ __plan_check.gpufabric_intent }}"
"""

RETURN = r"""
gpufabric_intent:
  description: For O(part=check_node) and O(part=check_cluster), the checked variables with their defaults filled in.
  returned: success and O(part) is C(check_node) or C(check_cluster)
  type: dict
index_reads:
  description:
    - For O(part=check_node), the package repository indexes this node's plan reads, each as the arguments of one
      M(gpufabric.rollout.doca_repo_info) call (C(url), C(format), C(validate_certs), C(variable), C(off_setting)),
      with C(name) (C(doca) or C(driver)), C(host) (this node) and C(key) (equal for equal reads, so that the plan
      reads each distinct one once per run).
  returned: success and O(part=check_node)
  type: list
  elements: dict
ansible_facts:
  description: For O(part=check_node) with O(gather_subset), the facts of M(ansible.builtin.setup) (those in O(facts)).
  returned: success and O(part=check_node) with O(gather_subset)
  type: dict
gpufabric_plan:
  description: For O(part=cluster), the cluster plan (nodes, network, operators' objects, summary).
  returned: success and O(part=cluster)
  type: dict
problems:
  description: Every refusal, each naming the variable, the value and what is allowed.
  returned: failure
  type: list
  elements: str
  sample:
    - "gpufabric_fabric: unknown key 'lossles_priority' (did you mean 'lossless_priority'?); allowed: ..."
summary:
  description: For O(part=cluster) and O(part=upgrade), the readable plan summary.
  returned: success
  type: str
files:
  description: For O(part=cluster), the files written.
  returned: success
  type: list
  elements: str
"""
