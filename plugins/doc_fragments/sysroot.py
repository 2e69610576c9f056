# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that read (or write) the host's sysfs and procfs below a sysroot."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  sysroot:
    description:
      - Root under which C(/sys), C(/proc) and C(/sys/kernel/config) are read, and written by the modules
        that change settings.
      - V(/) on a live host; elsewhere a captured snapshot (from C(playbooks/snapshot.yml)) or a lab node's
        hardware tree.
    type: path
    default: /
attributes:
  platform:
    platforms: posix
    support: full
    description: Linux hosts (sysfs, procfs); any host for a captured tree given as O(sysroot).
"""
