# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for GPUDirect Storage: gdscheck report → facts."""

from __future__ import annotations


def gdscheck_facts(text):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck

    return _gdscheck.parse(str(text or ""))


def gdscheck_summary(facts):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck

    return _gdscheck.summary(facts or {})


class FilterModule:
    def filters(self):
        return {
            "gdscheck_facts": gdscheck_facts,
            "gdscheck_summary": gdscheck_summary,
        }
