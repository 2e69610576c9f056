#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpudirect_facts
short_description: Read the GPU driver facts and choose DMA-BUF or nvidia-peermem for GPUDirect RDMA
version_added: "0.1.0"
description:
  - Reads the NVIDIA driver flavour and version (C(/proc/driver/nvidia/version), C(modinfo nvidia)), the kernel
    release, loaded modules, the CUDA version the driver supports (C(nvidia-smi)), the GPU models and whether
    MOFED/DOCA-OFED is installed, then decides how GPUDirect RDMA works on this host.
  - DMA-BUF needs the open kernel module, kernel 5.12 or newer, CUDA 11.7 or newer and a Turing or newer GPU.
    nvidia-peermem needs MOFED/DOCA-OFED. With O(method=auto) DMA-BUF is preferred, as NVIDIA recommends.
  - Changes nothing. Every /proc and /sys path is read under O(sysroot).
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  method:
    description: The mechanism wanted; C(auto) picks DMA-BUF when possible, else nvidia-peermem.
    type: str
    choices: [auto, dmabuf, peermem]
    default: auto
  gpus:
    description:
      - GPUs as discovered by M(gpufabric.rollout.topology_facts) (each with C(model)); when empty, C(nvidia-smi)
        is asked.
    type: list
    elements: dict
    default: []
  cuda_version:
    description: CUDA version to assume; when empty it is read from C(nvidia-smi), else derived from the driver branch.
    type: str
    default: ""
  mofed:
    description:
      - Whether MOFED/DOCA-OFED is installed; when not set it is detected (C(ofed_info -s), C(/usr/src/ofa_kernel)).
    type: bool
extends_documentation_fragment:
  - gpufabric.rollout.read_only
  - gpufabric.rollout.sysroot
  - gpufabric.rollout.facts
"""

EXAMPLES = r"""
- name: Decide how GPUDirect RDMA works here
  gpufabric.rollout.gpudirect_facts:
    sysroot: "{{ gpufabric_sysroot | default('/') }}"
    gpus: "{{ ansible_facts.gpufabric_topology.gpus | default([]) }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set on the host.
  returned: always
  type: dict
  contains:
    gpufabric_gpudirect:
      description: Driver facts and the decision.
      type: dict
      returned: always
      sample:
        driver_flavour: open
        driver_version: "580.159.04"
        kernel_release: "6.8.0-85-generic"
        cuda_version: "13.0"
        mofed: false
        peermem_available: true
        peermem_loaded: false
        nvidia_fs_loaded: false
        gpus: [{model: "NVIDIA H200", compute_cap: "9.0"}]
        decision:
          method: dmabuf
          error: null
          dmabuf: {ok: true, blockers: []}
          peermem: {ok: false, blockers: ["MOFED/DOCA-OFED is not installed ..."]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.gpudirect_read import gather
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "sysroot": {"type": "path", "default": "/"},
            "method": {"type": "str", "choices": list(_gpudirect.METHODS), "default": "auto"},
            "gpus": {"type": "list", "elements": "dict", "default": []},
            "cuda_version": {"type": "str", "default": ""},
            "mofed": {"type": "bool"},
        },
        supports_check_mode=True,
    )
    try:
        facts = gather(module.params, Runner.for_module(module), Sysroot("/"))
    except ParseError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, ansible_facts={"gpufabric_gpudirect": facts})


if __name__ == "__main__":
    main()
