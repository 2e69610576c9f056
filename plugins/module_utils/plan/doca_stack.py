# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The installed RDMA stack of a host: ``ofed_info -s`` and ``dkms status`` read leniently, the
release DKMS and the loaded mlx5_core report, which stack is installed and loaded (DOCA-OFED,
MLNX_OFED, inbox); plan/doca.py compares the loaded release with the expected one (the
``doca_ofed_facts`` and ``plan_facts`` modules and the node plan use these).

No Ansible imports; ``read`` reads a host through ``shared.host`` (Sysroot, Runner), the rest is pure.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.doca import PROFILES
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import as_text


def parse_ofed_info(text: Any) -> Optional[Dict[str, str]]:
    """``ofed_info -s`` -> {flavour: mlnx_ofed|doca_ofed, version}; None when nothing is recognised."""
    for line in as_text(text or "", "ofed_info output").splitlines():
        line = line.strip().rstrip(":")
        match = re.match(r"^MLNX_OFED_LINUX-(\S+)$", line)
        if match:
            return {"flavour": "mlnx_ofed", "version": match.group(1)}
        match = re.match(r"^OFED-internal-(\S+)$", line)
        if match:
            return {"flavour": "doca_ofed", "version": match.group(1)}
    return None


def ofed_release_from_dkms_version(version: str) -> Optional[str]:
    """'24.10.OFED.24.10.1.1.4.1-1' -> '24.10-1.1.4' (the release ofed_info and mlx5_core report)."""
    match = re.match(r"^(?:\d+:)?[\d.]+\.OFED\.(\d+\.\d+)\.(\d+)\.(\d+)\.(\d+)(?:\.\d+)*(?:-.*)?$", str(version))
    if not match:
        return None
    return "{}-{}.{}.{}".format(*match.groups())


def parse_dkms_status(text: Any) -> List[Dict[str, str]]:
    """``dkms status`` lines, dkms 3.x ('m/v, kernel, arch: state') and 2.x ('m, v, kernel, arch: state');
    other lines (dkms errors and warnings) are left out."""
    entries = []
    for line in as_text(text or "", "dkms status output").splitlines():
        line = line.strip()
        if not line or ":" not in line:
            continue
        head, _sep, state = line.rpartition(":")
        state = state.strip()
        parts = [p.strip() for p in head.split(",")]
        if "/" in parts[0]:
            module, _sep, version = parts[0].partition("/")
            rest = parts[1:]
        elif len(parts) >= 2:
            module, version = parts[0], parts[1]
            rest = parts[2:]
        else:
            continue
        if not module.strip() or not version.strip():
            continue
        entries.append(
            {
                "module": module,
                "version": version,
                "kernel": rest[0] if rest else "",
                "arch": rest[1] if len(rest) > 1 else "",
                "state": state.split()[0] if state else "",
            }
        )
    return entries


def detect_stack(ofed_info: Optional[str], packages: Mapping[str, str], modules: Mapping[str, Any]) -> Dict[str, Any]:
    """Which RDMA stack is on the host, installed and loaded.

    ``packages``: installed package -> version. ``modules``: what /sys/module shows:
    ``{"ib_core": bool, "mlx_compat": bool, "mlx5_core": bool, "mlx5_core_version": str|None}``.
    ``mlx_compat`` exists only with MOFED/DOCA-OFED kernel modules, so ib_core without it is the
    inbox stack.
    """
    info = parse_ofed_info(ofed_info)
    doca_meta = sorted(name for name in packages if name in {p[0] for p in PROFILES.values()})
    dkms_version = packages.get("mlnx-ofed-kernel-dkms")
    installed_release = ofed_release_from_dkms_version(dkms_version) if dkms_version else None
    if doca_meta or (info and info["flavour"] == "doca_ofed"):
        kind = "doca_ofed"
    elif (info and info["flavour"] == "mlnx_ofed") or dkms_version:
        kind = "mlnx_ofed"
    elif modules.get("ib_core") or modules.get("mlx5_core"):
        kind = "inbox"
    else:
        kind = "none"
    if modules.get("mlx_compat"):
        loaded = "ofed"
    elif modules.get("ib_core") or modules.get("mlx5_core"):
        loaded = "inbox"
    else:
        loaded = "none"
    return {
        "kind": kind,
        "profiles": doca_meta,
        "ofed_info": info,
        "installed_release": installed_release or (info or {}).get("version"),
        "loaded": loaded,
        "loaded_release": modules.get("mlx5_core_version") if loaded == "ofed" else None,
    }


def read_modules(sr: Any) -> Dict[str, Any]:
    """What sys/module and sys/class/infiniband below ``sr`` (a ``shared.host.Sysroot``) say is loaded."""

    def has(name: str) -> bool:
        return sr.isdir(f"sys/module/{name}")

    rdma_devices = sr.listdir("sys/class/infiniband")
    mlx5_devices = any(name.startswith("mlx5_") for name in rdma_devices)
    return {
        "ib_core": has("ib_core") or bool(rdma_devices),
        "mlx_compat": has("mlx_compat"),
        "mlx5_core": has("mlx5_core") or mlx5_devices,
        "mlx5_core_version": sr.read("sys/module/mlx5_core/version") or None,
        "rdma_devices": rdma_devices,
    }


def read(sr: Any, installed: Mapping[str, str], runner: Any) -> Dict[str, Any]:
    """The stack facts (``gpufabric_doca``): ``ofed_info -s`` and ``dkms status`` through ``runner``
    (their output is read leniently: what is not recognised is left out), sysfs below ``sr``, and
    ``installed`` ({package: version})."""
    modules = read_modules(sr)
    facts = detect_stack(runner.output("ofed_info", ["-s"]), installed, modules)
    facts["modules"] = modules
    facts["dkms"] = parse_dkms_status(runner.output("dkms", ["status"]) or "")
    return facts
