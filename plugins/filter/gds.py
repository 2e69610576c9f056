# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for GPUDirect Storage: gdscheck report → facts."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._lazy import module_utils

_gdscheck = module_utils("parsers.gdscheck")


def gdscheck_facts(text):
    return _gdscheck.parse(str(text or ""))


def gdscheck_summary(facts):
    return _gdscheck.summary(facts or {})


class FilterModule:
    def filters(self):
        return {
            "gdscheck_facts": gdscheck_facts,
            "gdscheck_summary": gdscheck_summary,
        }
