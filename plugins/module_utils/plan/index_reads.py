# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package repository indexes a node's plan reads (the DOCA repository when DOCA-OFED is managed,
the GPU driver repository when the collection installs the host driver), as the arguments of one
``doca_repo_info`` call each, and the index each node gets back from the reads of a run.

Every node that names the same repository with the same read arguments plans against the same
index, so the plan role reads each distinct one once per run (on the first node that names it,
where the node-side read always ran) instead of once per node: ``key`` tells the reads apart.

Pure functions, no Ansible imports.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_driver as _plan_gpu_driver
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_stack as _node_stack

DOCA_OFF = "gpufabric_doca_ofed_enabled: false"
DRIVER_OFF = "gpufabric_gpu_driver.packages: [] (and install the driver yourself)"
READ_ARGS = ("url", "format", "validate_certs", "variable", "off_setting")


def _read(name: str, host: str, url: str, fmt: str, validate_certs: Any, variable: str, off: str) -> Dict[str, Any]:
    read = {
        "name": name,
        "host": host,
        "url": url,
        "format": fmt,
        "validate_certs": bool(validate_certs),
        "variable": variable,
        "off_setting": off,
    }
    read["key"] = json.dumps([read[arg] for arg in READ_ARGS])
    return read


def index_reads(values: Mapping[str, Any], ansible: Mapping[str, Any], host: str) -> List[Dict[str, Any]]:
    """This node's reads: ``name`` (doca or driver), ``host`` (this node), the doca_repo_info arguments
    (READ_ARGS) and ``key``. A DOCA repository URL that cannot be composed (no OS token for this
    distribution) is not read: the node plan refuses it, naming the variable (node_stack.doca_section)."""
    reads = []
    fmt = "apt" if ansible.get("os_family") == "Debian" else "dnf"
    if values.get("gpufabric_doca_ofed_enabled"):
        try:
            url: Optional[str] = _node_stack.doca_repo(values, ansible)
        except _doca.DocaError:
            url = None
        if url:
            variable = "doca_ofed_repo_url" if values.get("doca_ofed_repo_url") else "doca_ofed_repo_base_url"
            reads.append(
                _read("doca", host, url, fmt, values.get("doca_ofed_validate_certs", True), variable, DOCA_OFF)
            )
    driver = values.get("gpufabric_gpu_driver") or {}
    if driver.get("managed_by") == "host" and driver.get("packages"):
        url = _plan_gpu_driver.cuda_repo(values, ansible)
        validate = values.get("gpu_driver_validate_certs", True)
        reads.append(_read("driver", host, url, fmt, validate, "gpu_driver_repo_url", DRIVER_OFF))
    return reads


def node_indexes(reads: List[Mapping[str, Any]], results: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """{name: the read's result} for this node's ``reads`` from the ``results`` of the run's reads (a
    looped doca_repo_info: each result carries its read as ``item``); a read without a result (not
    run, or skipped) is left out."""
    by_key = {}
    for result in results or []:
        item = result.get("item") or {}
        if item.get("key") is not None and not result.get("skipped"):
            by_key.setdefault(item["key"], result)
    return {read["name"]: by_key[read["key"]] for read in reads or [] if read.get("key") in by_key}
