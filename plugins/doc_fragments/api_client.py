# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that talk to the Kubernetes API server."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  platform:
    platforms: posix
    support: full
    description: The controller (any host with the C(kubernetes) library that reaches the API server).
"""
