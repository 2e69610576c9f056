#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: storage_facts
short_description: Read the node's filesystems back and hold them against the storage plan
version_added: "0.1.0"
description:
  - Reads what the kernel and the storage clients show, under O(sysroot) where it is a file (C(/proc/mounts),
    C(/sys/module), C(/sys/class/nvme)), and with the clients' tools otherwise (C(lnetctl net show), the Storage
    Scale C(mmlsconfig) and C(mmgetstate)), only for the backends the plan has.
  - Compares it with the node's storage plan (C(gpufabric_node_plan.storage_client)) and names, per filesystem,
    every difference, such as a filesystem not mounted, mounted without RDMA (C(proto=rdma)), LNet NIs missing on
    C(o2ib), NVMe-oF controllers not on C(rdma) or not live, Scale verbs settings, and (with O(gdscheck)) GDS not
    supported for a filesystem planned with GDS.
  - Changes nothing.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  plan:
    description: The node's storage plan (C(gpufabric_node_plan.storage_client)).
    type: dict
    required: true
  sysroot:
    description: Root under which C(/proc) and C(/sys) are read (a lab node's hardware tree).
    type: path
    default: /
  gdscheck:
    description: C(gdscheck -p) as parsed by the C(gpufabric.rollout.gdscheck_facts) filter; omit to skip the GDS check.
    type: dict
  gpfs_node:
    description: This node's name in the Storage Scale cluster (default the host name).
    type: str
    default: ""
  mmfs_bin:
    description: Directory of the Storage Scale commands.
    type: path
    default: /usr/lpp/mmfs/bin
extends_documentation_fragment:
  - gpufabric.rollout.read_only
attributes:
  platform:
    platforms: posix
    support: full
    description: Linux hosts.
  facts:
    support: full
    description: Returns C(ansible_facts.gpufabric_storage_readback).
"""

EXAMPLES = r"""
- name: Read the filesystems back
  gpufabric.rollout.storage_facts:
    plan: "{{ gpufabric_node_plan.storage_client }}"
    sysroot: "{{ gpufabric_node_plan.preflight.sysroot }}"
    gdscheck: "{{ gpufabric_gdscheck }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts.
  returned: always
  type: dict
  contains:
    gpufabric_storage_readback:
      description: What was seen, and the comparison with the plan.
      type: dict
      returned: always
      sample:
        ok: false
        problems: ["filesystem 'datasets' (nfs): /mnt/datasets has proto=tcp, planned proto=rdma"]
        filesystems:
          datasets: {backend: nfs, ok: false, problems: ["/mnt/datasets has proto=tcp, planned proto=rdma"]}
        node: []
        observed: {lnet: [{net: o2ib, nid: 10.0.1.1@o2ib, status: up, interfaces: [enp24s0np0]}]}
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def read_modules(sysroot, names):
    out = {}
    for name in names:
        base = os.path.join(sysroot, "sys", "module", name)
        params = {}
        pdir = os.path.join(base, "parameters")
        if os.path.isdir(pdir):
            for param in sorted(os.listdir(pdir)):
                value = _read(os.path.join(pdir, param))
                if value is not None:
                    params[param] = value.strip()
        version = _read(os.path.join(base, "version"))
        out[name] = {"loaded": os.path.isdir(base), "params": params, "version": version.strip() if version else None}
    return out


def read_nvme(sysroot):
    base = os.path.join(sysroot, "sys", "class", "nvme")
    controllers = []
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, name)
        controllers.append(
            {
                "name": name,
                "transport": (_read(os.path.join(path, "transport")) or "").strip(),
                "address": _storage_readback.parse_nvme_address(_read(os.path.join(path, "address")) or ""),
                "state": (_read(os.path.join(path, "state")) or "").strip(),
                "subsysnqn": (_read(os.path.join(path, "subsysnqn")) or "").strip(),
            }
        )
    return {"controllers": controllers}


class Runner:
    """Runs the clients' tools; tests replace it."""

    def __init__(self, module):
        self.module = module

    def output(self, path, args):
        if os.path.sep not in path:
            path = self.module.get_bin_path(path, opt_dirs=["/usr/local/sbin", "/usr/sbin", "/sbin"])
        if not path or not os.path.exists(path):
            return None
        rc, out, _err = self.module.run_command([path, *args], environ_update={"LC_ALL": "C"})
        return out if rc == 0 else None


def observe(plan, sysroot, gdscheck, gpfs_node, mmfs_bin, runner):
    backends = set(plan.get("backends") or [])
    names = {m.replace("-", "_") for m in plan.get("modules") or []} | {"nvme_core", "ko2iblnd", "rpcrdma"}
    observed = {
        "mounts": _storage_readback.parse_mounts(_read(os.path.join(sysroot, "proc", "mounts")) or ""),
        "modules": read_modules(sysroot, sorted(names)),
        "gdscheck": gdscheck,
        "lnet": None,
        "nvme": None,
        "gpfs": None,
    }
    if "lustre" in backends:
        text = runner.output("lnetctl", ["net", "show"])
        observed["lnet"] = _storage_readback.parse_lnet_show(text) if text is not None else None
    if "nvmeof" in backends:
        observed["nvme"] = read_nvme(sysroot)
    if "gpfs" in backends:
        config = runner.output(os.path.join(mmfs_bin, "mmlsconfig"), [])
        state = runner.output(os.path.join(mmfs_bin, "mmgetstate"), [])
        observed["gpfs"] = {
            "config": _storage_readback.parse_mmlsconfig(config, gpfs_node) if config is not None else None,
            "state": _storage_readback.parse_mmgetstate(state or "", gpfs_node),
        }
    return observed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan=dict(type="dict", required=True),
            sysroot=dict(type="path", default="/"),
            gdscheck=dict(type="dict"),
            gpfs_node=dict(type="str", default=""),
            mmfs_bin=dict(type="path", default="/usr/lpp/mmfs/bin"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    node = params["gpfs_node"] or socket.gethostname().split(".")[0]
    observed = observe(params["plan"], params["sysroot"], params["gdscheck"], node, params["mmfs_bin"], Runner(module))
    result = _storage_readback.check(params["plan"], observed)
    result["observed"] = {k: v for k, v in observed.items() if k != "gdscheck"}
    module.exit_json(changed=False, ansible_facts={"gpufabric_storage_readback": result})


if __name__ == "__main__":
    main()
