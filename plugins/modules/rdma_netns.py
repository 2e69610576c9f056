#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_netns
short_description: Set the RDMA subsystem network namespace mode (shared or exclusive)
version_added: 0.1.0
description:
  - Reads C(rdma system show) and sets C(rdma system set netns MODE) when it differs.
  - Persists the mode for the next boot as the C(ib_core) module option C(netns_mode) in a
    modprobe.d file (C(1) = shared, C(0) = exclusive).
  - The RDMA shared device plugin needs shared mode; SR-IOV with rdma-cni needs exclusive mode.
author:
  - gpufabric.rollout contributors (@gpufabric)
attributes:
  check_mode:
    support: full
    description: Reports what would change without running C(rdma system set) or writing the file.
  diff_mode:
    support: full
    description: Returns the runtime mode and the modprobe.d content before and after.
  platform:
    platforms: posix
    support: full
    description: Linux hosts with iproute2 C(rdma).
options:
  mode:
    description: Wanted network namespace mode.
    type: str
    choices: [shared, exclusive]
    required: true
  persist:
    description: Write the C(ib_core) option so the mode holds after a reboot.
    type: bool
    default: true
  modprobe_conf:
    description: modprobe.d file that carries the option.
    type: path
    default: /etc/modprobe.d/gpufabric-ib_core.conf
notes:
  - The kernel refuses to change the mode (EBUSY) once network namespaces other than the
    initial one exist; the module then fails with the tool's message and the persisted option
    applies at the next boot. If ib_core is in the initramfs, rebuild it after a change.
"""

EXAMPLES = r"""
- name: Use exclusive RDMA netns mode for SR-IOV pods
  gpufabric.rollout.rdma_netns:
    mode: exclusive
"""

RETURN = r"""
runtime_before:
  description: Mode reported by C(rdma system show) before the change.
  returned: always
  type: str
  sample: shared
runtime_after:
  description: Mode reported after the change (the wanted mode in check mode).
  returned: always
  type: str
  sample: exclusive
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import parse_rdma_system
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import CommandError, Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError


class NetnsError(Exception):
    """The RDMA netns mode cannot be read or set."""


def conf_text(mode):
    value = 1 if mode == "shared" else 0
    return (
        "# Managed by gpufabric.rollout (roce role): RDMA netns mode at ib_core load.\n"
        f"# 1 = shared, 0 = exclusive (rdma system set netns).\noptions ib_core netns_mode={value}\n"
    )


def _runtime_mode(runner, rdma):
    argv = [rdma, "system", "show"]
    try:
        return parse_rdma_system(runner.check(argv))["netns"]
    except ParseError as exc:
        raise exc.within("rdma system show") from None


def run(params, runner, files, check_mode, atomic_move):
    """Read -> diff -> set for ``params``; ``files`` is the Sysroot the modprobe.d file lives under
    (``/`` on a host), ``atomic_move(src, dest)`` replaces a file. Fills ``result`` as it goes, so a
    failure still reports what was read."""
    mode = params["mode"]
    path = params["modprobe_conf"]
    result = dict(changed=False, runtime_before=None, runtime_after=None)
    try:
        rdma = runner.which("rdma")
        if not rdma:
            raise NetnsError("rdma (iproute2) is not installed")
        before = _runtime_mode(runner, rdma)
        result["runtime_before"] = result["runtime_after"] = before
        old_conf = files.text(path)
        new_conf = conf_text(mode) if params["persist"] else old_conf
        result["changed"] = before != mode or new_conf != old_conf
        result["diff"] = dict(
            before=f"runtime: {before}\n{path}:\n{old_conf or ''}",
            after=f"runtime: {mode}\n{path}:\n{new_conf or ''}",
        )
        if result["changed"] and check_mode:
            result["runtime_after"] = mode
        elif result["changed"]:
            if new_conf != old_conf:
                dest = files.path(path)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                tmp = dest + ".tmp"
                with open(tmp, "w") as handle:
                    handle.write(new_conf)
                os.chmod(tmp, 0o644)
                atomic_move(tmp, dest)
            if before != mode:
                runner.check([rdma, "system", "set", "netns", mode])
                result["runtime_after"] = _runtime_mode(runner, rdma)
                if result["runtime_after"] != mode:
                    raise NetnsError(f"rdma system show reports {result['runtime_after']} after setting {mode}")
    except (NetnsError, CommandError, ParseError, OSError) as exc:
        result["error"] = str(exc)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["shared", "exclusive"], required=True),
            persist=dict(type="bool", default=True),
            modprobe_conf=dict(type="path", default="/etc/modprobe.d/gpufabric-ib_core.conf"),
        ),
        supports_check_mode=True,
    )
    result = run(module.params, Runner.for_module(module), Sysroot("/"), module.check_mode, module.atomic_move)
    error = result.pop("error", None)
    if error is not None:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
