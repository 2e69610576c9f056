# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the actions that run on the controller and change no managed host."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  action:
    support: full
    description: Runs on the controller as an action plugin.
  diff_mode:
    support: none
    description: Nothing on a managed host changes.
  platform:
    support: full
    platforms: all
    description: The controller.
"""
