#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: installed_packages
short_description: Read the installed packages with one dpkg-query or rpm query, as ansible_facts.packages
version_added: 0.1.0
description:
  - Sets C(ansible_facts.packages) in the layout of M(ansible.builtin.package_facts), a list of
    entries per package name. An entry holds what the collection reads of it, C(version), and for
    rpm C(release) and C(epoch) (only when the package has one). The C(name), C(arch) and
    C(source) keys of package_facts are left out. A GPU node has about a thousand packages, every
    later task of the node copies its facts, and nothing reads those keys. A package installed at
    more than one version or architecture has one entry each, in the order the package database
    lists them.
  - Reads the package database only, with one C(dpkg-query -W) (Debian family) or one C(rpm -qa)
    (RedHat family) call. M(ansible.builtin.package_facts)' apt backend opens the apt cache and
    tests every package that the repository lists know (63 000 on Debian 12 with main alone), which
    costs about 0.6 s of CPU per read and node against a few milliseconds here, and it needs
    python3-apt in the Python that runs the module.
  - On dpkg, a package counts as installed unless its status is C(not-installed) or
    C(config-files) (deb-control(5)). A package installed for two architectures (multiarch) is
    one name with an entry per architecture, as package_facts' rpm backend lists multilib
    packages; its apt backend names the foreign one C(name:arch) instead. The C(category) and
    C(origin) keys of the apt backend (read from the repository lists) are not set.
options:
  manager:
    description:
      - The package database. C(auto) takes dpkg when C(dpkg-query) is on the PATH, else rpm.
    type: str
    choices: [auto, dpkg, rpm]
    default: auto
attributes:
  check_mode:
    description: Only reads; a check run returns the same facts.
    support: full
  diff_mode:
    description: Changes nothing, so there is no difference to show.
    support: none
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the installed packages
  gpufabric.rollout.installed_packages:

- name: Show the installed rdma-core version
  ansible.builtin.debug:
    msg: "{{ ansible_facts.packages['rdma-core'][0].version }}"
"""

RETURN = r"""
ansible_facts:
  description: The installed packages.
  returned: always
  type: dict
  contains:
    packages:
      description: "{name: [entries]}; each entry has the version, and for rpm also the release and
        the epoch (left out when the package has none)."
      type: dict
      sample:
        rdma-core: [{"version": "2410mlnx54-1.2410068"}]
manager:
  description: The package database read.
  returned: always
  type: str
  sample: dpkg
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner


def main():
    module = AnsibleModule(
        argument_spec=dict(manager=dict(type="str", choices=["auto", "dpkg", "rpm"], default="auto")),
        supports_check_mode=True,
    )
    try:
        manager, packages = _packages.read_installed(Runner.for_module(module), module.params["manager"])
    except _packages.PackagesError as exc:
        module.fail_json(msg=str(exc), **({"rc": exc.rc} if exc.rc is not None else {}))
    module.exit_json(changed=False, manager=manager, ansible_facts={"packages": packages})


if __name__ == "__main__":
    main()
