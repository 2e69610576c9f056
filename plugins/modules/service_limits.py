#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_limits
short_description: Read whether services are installed and running, and their main process's locked-memory limit
version_added: "0.1.0"
description:
  - For each service of O(units), reads its load and active state and main PID (C(systemctl show)) and, when it
    runs, the locked-memory limit (RLIMIT_MEMLOCK) its process has now (C(/proc/<pid>/limits)).
  - A limit written into a service's unit applies to its process only once the service was restarted; this reads
    the limit the process (and the containers a container runtime starts) really has.
  - Changes nothing.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  units:
    description: Service names, such as C(containerd.service).
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - gpufabric.rollout.read_only
"""

EXAMPLES = r"""
- name: Read the container runtimes' locked-memory limits
  gpufabric.rollout.service_limits:
    units: [containerd.service, crio.service]
  register: runtimes
"""

RETURN = r"""
services:
  description: One entry per unit, in the order given.
  returned: always
  type: list
  elements: dict
  sample:
    - unit: containerd.service
      installed: true
      active: true
      main_pid: 1234
      memlock: {soft: unlimited, hard: unlimited}
    - unit: crio.service
      installed: false
      active: false
      main_pid: 0
      memlock: null
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import limits as _limits
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

PROPERTIES = "--property=Id,LoadState,ActiveState,MainPID"


def read(units, runner: Runner, proc: Sysroot) -> list:
    """One entry per unit (see RETURN); /proc is read below ``proc``."""
    systemctl = runner.which("systemctl")
    out = []
    for unit in units:
        props = {}
        if systemctl:
            rc, text, _err = runner.run([systemctl, "show", PROPERTIES, "--", unit])
            props = _limits.systemctl_show(text) if rc == 0 else {}
        pid = int(props.get("MainPID") or 0) if (props.get("MainPID") or "0").isdigit() else 0
        memlock = None
        if pid > 0:
            text = proc.text(f"proc/{pid}/limits")
            memlock = _limits.proc_limit(text) if text else None
        out.append(
            {
                "unit": unit,
                "installed": props.get("LoadState") == "loaded",
                "active": props.get("ActiveState") == "active",
                "main_pid": pid,
                "memlock": memlock,
            }
        )
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec={"units": {"type": "list", "elements": "str", "required": True}},
        supports_check_mode=True,
    )
    try:
        services = read(module.params["units"], Runner.for_module(module), Sysroot("/"))
    except ParseError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, services=services)


if __name__ == "__main__":
    main()
