#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_facts
short_description: Read what the plan needs from a GPU node in one call (topology, GPU driver, packages, RDMA stack)
version_added: 0.1.0
description:
  - One read of a GPU node for the plan (role C(plan)), the facts that M(gpufabric.rollout.topology_facts),
    M(gpufabric.rollout.gpudirect_facts), M(gpufabric.rollout.installed_packages) and
    M(gpufabric.rollout.doca_ofed_facts) return, read by the same code in the same order, from one module
    process instead of four.
  - The GPU driver read takes the GPUs the topology read found; the RDMA stack read takes the installed
    versions of the packages that tell the stacks apart, from the package read.
  - With O(gather_subset), the facts of M(ansible.builtin.setup) first, from the same collectors, so that
    the plan's node check reads the node in one module call (the plan action, part C(check_node) with
    C(read)).
  - Fails with the message of the read that failed (topology, GPU driver, package database), and reads
    nothing after it; the setup facts gathered before it are then in RV(setup_facts).
  - Changes nothing.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  nvidia_smi:
    description:
      - Where the C(nvidia-smi topo -m) matrix comes from, as O(gpufabric.rollout.topology_facts#module:nvidia_smi).
    type: str
    choices: [auto, file, command, never]
    default: auto
  storage_nics:
    description:
      - NICs to keep out of the rails, as O(gpufabric.rollout.topology_facts#module:storage_nics).
    type: list
    elements: str
    default: []
  rail_nics:
    description:
      - NICs kept in the GPU matching pool, as O(gpufabric.rollout.topology_facts#module:rail_nics).
    type: list
    elements: str
    default: []
  method:
    description:
      - The GPUDirect RDMA mechanism wanted, as O(gpufabric.rollout.gpudirect_facts#module:method).
    type: str
    choices: [auto, dmabuf, peermem]
    default: auto
  cuda_version:
    description:
      - CUDA version to assume, as O(gpufabric.rollout.gpudirect_facts#module:cuda_version).
    type: str
    default: ""
  manager:
    description:
      - The package database, as O(gpufabric.rollout.installed_packages#module:manager).
    type: str
    choices: [auto, dpkg, rpm]
    default: auto
  gather_subset:
    description:
      - The setup facts to gather as well, as O(ansible.builtin.setup#module:gather_subset); not given,
        none are gathered.
    type: list
    elements: str
  gather_timeout:
    description:
      - As O(ansible.builtin.setup#module:gather_timeout).
    type: int
    default: 10
  filter:
    description:
      - Only the setup facts that match one of these, as O(ansible.builtin.setup#module:filter).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufabric.rollout.read_only
  - gpufabric.rollout.sysroot
  - gpufabric.rollout.facts
seealso:
  - module: gpufabric.rollout.topology_facts
  - module: gpufabric.rollout.gpudirect_facts
  - module: gpufabric.rollout.installed_packages
  - module: gpufabric.rollout.doca_ofed_facts
"""

EXAMPLES = r"""
- name: Read the node for the plan
  gpufabric.rollout.plan_facts:
    sysroot: "{{ gpufabric_sysroot | default('/') }}"

- name: Show the rails and the RDMA stack
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpufabric_topology.rails }} / {{ ansible_facts.gpufabric_doca.kind }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added, each as the module named returns it.
  returned: success
  type: dict
  contains:
    gpufabric_topology:
      description: The topology (M(gpufabric.rollout.topology_facts)); see docs/topology-facts.md.
      returned: success
      type: dict
    gpufabric_gpudirect:
      description: The GPU driver facts and the GPUDirect RDMA decision (M(gpufabric.rollout.gpudirect_facts)).
      returned: success
      type: dict
    packages:
      description: The installed packages (M(gpufabric.rollout.installed_packages)), {name -> [entries]}.
      returned: success
      type: dict
    gpufabric_doca:
      description: The installed and loaded RDMA stack (M(gpufabric.rollout.doca_ofed_facts)).
      returned: success
      type: dict
nvidia_smi_source:
  description: Where the nvidia-smi matrix came from (C(file), C(command) or C(none)).
  returned: success
  type: str
  sample: file
manager:
  description: The package database read.
  returned: success
  type: str
  sample: dpkg
setup_facts:
  description: The setup facts gathered before a read failed (O(gather_subset) given).
  returned: failure after the setup facts were gathered
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts import ansible_collector, default_collectors
from ansible.module_utils.facts.collector import CollectorNotFoundError, CycleFoundInFactDeps, UnresolvedFactDep
from ansible.module_utils.facts.namespace import PrefixFactNamespace

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect_read as _gpudirect_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology_read as _topology_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import TopologyError
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

# setup's minimal subset (the "min" of gather_subset), as ansible.builtin.setup documents it.
MINIMAL_SUBSET = frozenset(
    (
        "apparmor",
        "caps",
        "cmdline",
        "date_time",
        "distribution",
        "dns",
        "env",
        "fips",
        "local",
        "lsb",
        "pkg_mgr",
        "platform",
        "python",
        "selinux",
        "service_mgr",
        "ssh_pub_keys",
        "user",
    )
)


def gather(module):
    """setup's facts for O(gather_subset) and O(filter), from ansible-core's fact collectors, named
    as setup names them (ansible_*)."""
    try:
        collector = ansible_collector.get_ansible_collector(
            all_collector_classes=default_collectors.collectors,
            namespace=PrefixFactNamespace(namespace_name="ansible", prefix="ansible_"),
            filter_spec=module.params["filter"],
            gather_subset=module.params["gather_subset"],
            gather_timeout=module.params["gather_timeout"],
            minimal_gather_subset=MINIMAL_SUBSET,
        )
    except (TypeError, CollectorNotFoundError, CycleFoundInFactDeps, UnresolvedFactDep) as exc:
        module.fail_json(msg=f"gather_subset: {exc}")
    return collector.collect(module=module)


def read(params, runner, files):
    """The module's result (without changed): the four reads in order, each given what the one before
    found. TopologyError, ParseError, OSError or PackagesError from the read that failed."""
    topology, source = _topology_read.read(params, runner)
    gpudirect = _gpudirect_read.gather(
        {
            "sysroot": params["sysroot"],
            "method": params["method"],
            "gpus": topology["gpus"],
            "cuda_version": params["cuda_version"],
            "mofed": None,
        },
        runner,
        files,
    )
    manager, packages = _packages.read_installed(runner, params["manager"])
    installed = _packages.first_versions(packages, _doca.stack_package_names())
    doca = _doca_stack.read(Sysroot(params["sysroot"]), installed, runner)
    facts = {"gpufabric_topology": topology, "gpufabric_gpudirect": gpudirect, "packages": packages}
    facts["gpufabric_doca"] = doca
    return {"ansible_facts": facts, "nvidia_smi_source": source, "manager": manager}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysroot=dict(type="path", default="/"),
            nvidia_smi=dict(type="str", default="auto", choices=["auto", "file", "command", "never"]),
            storage_nics=dict(type="list", elements="str", default=[]),
            rail_nics=dict(type="list", elements="str", default=[]),
            method=dict(type="str", default="auto", choices=["auto", "dmabuf", "peermem"]),
            cuda_version=dict(type="str", default=""),
            manager=dict(type="str", default="auto", choices=["auto", "dpkg", "rpm"]),
            gather_subset=dict(type="list", elements="str"),
            gather_timeout=dict(type="int", default=10),
            filter=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    gathering = module.params["gather_subset"] is not None
    setup = gather(module) if gathering else {}
    gathered = {"setup_facts": setup} if gathering else {}
    try:
        result = read(module.params, Runner.for_module(module), Sysroot("/"))
    except (TopologyError, ParseError) as exc:
        module.fail_json(msg=str(exc), **gathered)
    except OSError as exc:
        module.fail_json(msg=f"cannot read the sysroot {module.params['sysroot']}: {exc}", **gathered)
    except _packages.PackagesError as exc:
        module.fail_json(msg=str(exc), **gathered, **({"rc": exc.rc} if exc.rc is not None else {}))
    result["ansible_facts"] = dict(setup, **result["ansible_facts"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
