#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: doca_ofed_facts
short_description: Detect the RDMA driver stack on a host (inbox, MLNX_OFED or DOCA-OFED), installed and loaded
version_added: 0.1.0
description:
  - Reads C(ofed_info -s), C(dkms status) and C(/sys/module) under O(sysroot), and the installed
    package versions passed in O(installed), and returns C(ansible_facts.gpufabric_doca).
  - C(mlx_compat) is a module only MLNX_OFED/DOCA-OFED ship, so a loaded C(ib_core) or
    C(mlx5_core) without it is the inbox stack. RDMA devices under C(sys/class/infiniband) count
    as a loaded RDMA core when C(/sys/module) is not visible.
options:
  installed:
    description: Installed package name to version (for example from M(gpufabric.rollout.installed_packages)).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpufabric.rollout.read_only
  - gpufabric.rollout.sysroot
  - gpufabric.rollout.facts
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Detect the RDMA stack
  gpufabric.rollout.doca_ofed_facts:
    sysroot: "{{ gpufabric_sysroot }}"
    installed: "{{ ansible_facts.packages | dict2items | map(attribute='key') | zip(ansible_facts.packages | dict2items
      | map(attribute='value') | map('first') | map(attribute='version')) | community.general.dict }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts.
  returned: always
  type: dict
  contains:
    gpufabric_doca:
      description: The detected stack.
      type: dict
      returned: always
      sample:
        kind: doca_ofed
        profiles: [doca-ofed]
        installed_release: 24.10-1.1.4
        loaded: ofed
        loaded_release: 24.10-1.1.4
        ofed_info: {flavour: doca_ofed, version: 24.10-1.1.4}
        dkms: [{module: mlnx-ofed-kernel, version: 24.10.OFED.24.10.1.1.4.1, kernel: 6.8.0-45-generic,
                arch: x86_64, state: installed}]
        modules: {ib_core: true, mlx_compat: true, mlx5_core: true, mlx5_core_version: 24.10-1.1.4}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysroot=dict(type="path", default="/"),
            installed=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    installed = {str(k): str(v) for k, v in module.params["installed"].items()}
    facts = _doca_stack.read(Sysroot(module.params["sysroot"]), installed, Runner.for_module(module))
    module.exit_json(changed=False, ansible_facts={"gpufabric_doca": facts})


if __name__ == "__main__":
    main()
