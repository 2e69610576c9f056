# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for GPUDirect Storage: gdscheck report → facts, and cufile.json filesystem sections."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _gdscheck


def gdscheck_facts(text):
    return _gdscheck.parse(str(text or ""))


def gdscheck_summary(facts):
    return _gdscheck.summary(facts or {})


def cufile_fs_sections(sections, addresses):
    if not isinstance(sections, dict):
        raise AnsibleFilterError("cufile_fs_sections expects a dict of filesystem sections")
    out = {}
    for name, section in sections.items():
        section = dict(section or {})
        if section.get("rdma_dev_addr_list") == "discovered":
            section["rdma_dev_addr_list"] = list(addresses or [])
        out[name] = section
    return out


class FilterModule:
    def filters(self):
        return {
            "gdscheck_facts": gdscheck_facts,
            "gdscheck_summary": gdscheck_summary,
            "cufile_fs_sections": cufile_fs_sections,
        }
