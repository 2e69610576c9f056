# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``gdscheck -p`` output (and the same report in cufile.log) into facts.

The report's wording changes between GDS releases (docs/facts.md, "gdscheck and gdsio"): block titles, the list of
filesystems, ``--MOFED peer direct`` vs ``--Mellanox PeerDirect``, ``key : value`` vs
``key: value``. So the parser reads ``key : value`` pairs per block and recognises the few
lines it needs by loose patterns; anything else is kept in ``other`` rather than rejected.
cuFile writes the same report to cufile.log at level INFO, each line prefixed with a
timestamp, pid and source location; those prefixes are stripped first.

Contract: ``parse`` reads any text (str or bytes) without raising: what it cannot read is
None, or a line in ``other``. Integers of more than 20 digits stay text.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import as_text, integer_or_none
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.storage_backends import GDSCHECK_LABELS

# " 30-11-2026 01:18:59:824 [pid=623 tid=623] INFO   cufio-drv:254 NVMe : Unsupported"
_LOG_PREFIX = re.compile(r"^\s*\d{1,2}-\d{1,2}-\d{4}\s+[\d:.]+\s+\[pid=\d+\s+tid=\d+\]\s+[A-Z]+\s+[\w.-]+:\d+\s?")
_SECTION = re.compile(r"^\s*([A-Z][A-Z /]+[A-Z])\s*:\s*$")
_PAIR = re.compile(r"^\s*(-*)\s*([^:]+?)\s*:\s*(.*?)\s*$")
_GPU = re.compile(
    r"GPU index\s+(?P<index>[0-9]{1,9})\s+(?P<name>.+?)\s+bar:\s*(?P<bar>[0-9]{1,9})\s+"
    r"bar size \(MiB\):\s*(?P<size>[0-9]{1,20})"
    r"(?:\s*,?\s*(?P<support>supports GDS|[^,]*?not support[^,]*))?(?:\s*,\s*IOMMU State:\s*(?P<iommu>\w+))?",
    re.IGNORECASE,
)
_CONFIG_KEY = re.compile(r"^(properties|fs|profile|execution|logging|miscellaneous)\.")
_VERSIONS = re.compile(r"(nvidia_fs|libcufile)\s+version\s*:\s*(\S+)", re.IGNORECASE)


def strip_log_prefix(line: str) -> str:
    return _LOG_PREFIX.sub("", line, count=1)


def _typed(value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    number = integer_or_none(value)
    if number is not None and value == value.strip():
        return number
    parts = value.split()
    numbers = [integer_or_none(p) for p in parts]
    if len(parts) > 1 and all(n is not None for n in numbers):
        return numbers
    return value


def _state(value: str) -> Optional[bool]:
    """Supported/Enabled/Loaded/Configured → True; Unsupported/Disabled/Not ... → False."""
    low = value.strip().lower()
    if low.startswith(("unsupported", "disabled", "not ", "no ", "none")):
        return False
    if low.startswith(("supported", "enabled", "loaded", "configured", "yes")):
        return True
    return None


# Newer releases print the data paths a filesystem can use instead of Supported/Unsupported, e.g.
# "NVMe : c2c, nvfs, compat" (NVIDIA/MagnumIO gds-diag checks/gdscheck.py): nvfs, dmabuf and
# nvidia_peermem are GDS through nvidia-fs or user-space RDMA, p2pdma and c2c the direct paths;
# compat alone is POSIX I/O.
_GDS_TOKENS = frozenset(("nvfs", "dmabuf", "nvidia_peermem", "p2pdma", "c2c"))
_MODE_TOKEN = re.compile(r"^[a-z0-9_]+$")


def _modes(value: str) -> Optional[List[str]]:
    tokens = [t.strip().lower() for t in value.split(",")]
    if tokens and all(_MODE_TOKEN.match(t) for t in tokens) and (set(tokens) & (_GDS_TOKENS | {"compat"})):
        return tokens
    return None


def filesystem_support(facts: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per storage backend (module_utils/storage): the DRIVER CONFIGURATION line gdscheck printed
    for it (label, supported, modes), the newest label first; backends it printed nothing for are left out."""
    out: Dict[str, Dict[str, Any]] = {}
    drivers = facts.get("drivers") or {}
    modes = facts.get("driver_modes") or {}
    for backend, labels in GDSCHECK_LABELS.items():
        for label in labels:
            if label in drivers:
                out[backend] = {"label": label, "supported": drivers[label], "modes": modes.get(label)}
                break
    return out


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def _pair_line(facts: Dict[str, Any], section: Optional[str], dashes: str, key: str, value: str) -> bool:
    """Read one ``key : value`` line of the report into ``facts``; False when it says nothing the
    facts hold (the caller keeps it under ``other``)."""
    nkey = _norm(key)
    if nkey == "gds_release_version":
        facts["gds_release"] = value
    elif nkey in ("platform", "arch") and facts["platform"] is None:
        facts["platform"] = value
    elif nkey == "iommu":
        facts["iommu_enabled"] = value.lower() not in ("disabled", "off")
    elif "driver_info_status" in nkey:
        facts["driver_status"] = value
        facts["open_driver"] = "open" in value.lower() if "supported" in value.lower() else None
    elif "cuda_driver_version" in nkey:
        facts["cuda_driver_version"] = _typed(value)
    elif dashes and ("peer" in nkey and "direct" in nkey):
        facts["peer_direct"] = _state(value)
    elif dashes and nkey == "dmabuf_support":
        facts["dmabuf"] = _state(value)
    elif dashes and nkey == "rdma_library":
        facts["rdma_library_loaded"] = _state(value)
    elif dashes and nkey == "rdma_devices":
        facts["rdma_devices_configured"] = _state(value)
    elif section == "cufile_configuration" or _CONFIG_KEY.match(key.strip()):
        facts["config"][key.strip()] = _typed(value)
    elif section == "driver_configuration" and _state(value) is not None:
        facts["drivers"][key.strip()] = _state(value)
    elif section == "driver_configuration" and _modes(value) is not None:
        facts["driver_modes"][key.strip()] = _modes(value)
        facts["drivers"][key.strip()] = bool(set(_modes(value) or []) & _GDS_TOKENS)
    elif section != "environment":
        return False
    return True


def parse(text: Any) -> Dict[str, Any]:
    """Return facts from a gdscheck -p report. Missing items are None, never guessed."""
    text = as_text(text, "gdscheck output")
    facts: Dict[str, Any] = {
        "gds_release": None,
        "nvidia_fs_version": None,
        "libcufile_version": None,
        "nvidia_fs_loaded": None,
        "platform": None,
        "drivers": {},
        "driver_modes": {},
        "peer_direct": None,
        "dmabuf": None,
        "rdma_library_loaded": None,
        "rdma_devices_configured": None,
        "config": {},
        "compat_mode": None,
        "gpus": [],
        "iommu_enabled": None,
        "open_driver": None,
        "driver_status": None,
        "cuda_driver_version": None,
        "verification": None,
        "other": [],
    }
    section = None
    for raw in text.splitlines():
        line = strip_log_prefix(raw).rstrip()
        if not line.strip() or set(line.strip()) <= set("=-"):
            continue
        stripped = line.strip()
        low = stripped.lower()
        match = _SECTION.match(line)
        if match:
            section = _norm(match.group(1))
            continue
        if low.startswith("platform verification"):
            facts["verification"] = "succeeded" if "succeed" in low else "failed"
            continue
        versions = _VERSIONS.findall(stripped)
        if versions:
            for name, value in versions:
                facts[f"{name.lower()}_version"] = value
            continue
        if "nvidia-fs/devcount" in low or "nvidia_fs driver not loaded" in low or "nvidia-fs driver not loaded" in low:
            facts["nvidia_fs_loaded"] = False
            continue
        gpu = _GPU.search(stripped)
        if gpu:
            support = (gpu.group("support") or "").lower()
            facts["gpus"].append(
                {
                    "index": int(gpu.group("index")),
                    "name": gpu.group("name"),
                    "bar": int(gpu.group("bar")),
                    "bar_size_mib": int(gpu.group("size")),
                    "supports_gds": None if not support else support.startswith("supports"),
                    "iommu_enabled": None if not gpu.group("iommu") else gpu.group("iommu").lower() != "disabled",
                }
            )
            continue
        pair = _PAIR.match(line)
        if not pair:
            facts["other"].append(stripped)
            continue
        dashes, key, value = pair.groups()
        if not _pair_line(facts, section, dashes, key, value):
            facts["other"].append(stripped)
    config = facts["config"]
    for name in ("properties.use_compat_mode", "properties.allow_compat_mode"):
        if isinstance(config.get(name), bool):
            facts["compat_mode"] = config[name]
            break
    if facts["nvidia_fs_loaded"] is None and facts["nvidia_fs_version"] not in (None, "", "N/A"):
        facts["nvidia_fs_loaded"] = True
    facts["filesystems"] = filesystem_support(facts)
    return facts


def summary(facts: Dict[str, Any]) -> List[str]:
    """Short human lines for the rollout report."""
    nvfs = facts.get("nvidia_fs_version") or ("not loaded" if facts.get("nvidia_fs_loaded") is False else "unknown")
    lines = [
        f"GDS release {facts.get('gds_release') or 'unknown'}, "
        f"libcufile {facts.get('libcufile_version') or 'unknown'}, nvidia_fs {nvfs}",
        f"compat mode {facts.get('compat_mode')}, IOMMU {'on' if facts.get('iommu_enabled') else 'off'}, "
        f"verification {facts.get('verification') or 'unknown'}",
    ]
    supported = sorted(k for k, v in facts.get("drivers", {}).items() if v)
    lines.append("supported: " + (", ".join(supported) if supported else "none (compat mode only)"))
    return lines
