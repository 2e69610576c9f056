# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that return facts."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  facts:
    support: full
    description: Returns its facts under C(ansible_facts) (named in RETURN), for later plays and roles.
"""
