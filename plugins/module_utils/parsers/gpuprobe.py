# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU probe's JSON (``roles/validate/files/gpu_probe.py``, schema ``gpufabric.gpu_probe``
version 1): loading and checking it.

Pure Python (>= 3.8), no Ansible imports; ``GpuProbeError`` is the only exception raised for bad
input.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, Union

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import integer_or_none

SCHEMA = "gpufabric.gpu_probe"
SCHEMA_VERSIONS = (1,)


class GpuProbeError(ValueError):
    """A probe document that is not valid JSON of a known schema version."""


def _speed(text: Any) -> Any:
    match = re.match(r"\s*([0-9]{1,20}(?:\.[0-9]{1,20})?)", str(text or ""), re.ASCII)
    return float(match.group(1)) if match else None


def _width(text: Any) -> Any:
    return integer_or_none(str(text or ""), 1)


def _number(value: Any, where: str) -> Any:
    if value is None:
        return None
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer too large for a float
        number = math.inf
    if not math.isfinite(number) or number < 0:
        big = isinstance(value, int) and value.bit_length() > 64
        shown = f"an integer of {value.bit_length()} bits" if big else repr(value)
        raise GpuProbeError(f"{where} is {shown}; a bandwidth must be a non-negative number")
    return number


def load(doc: Union[str, bytes, Dict[str, Any]]) -> Dict[str, Any]:
    """Parse and check a probe document; returns it with ``pcie_parsed`` added to each GPU
    (``{current_speed_gts, max_speed_gts, current_width, max_width}`` from the sysfs strings)."""
    if isinstance(doc, (str, bytes)):
        try:
            doc = json.loads(doc)
        except ValueError as exc:
            raise GpuProbeError(f"the GPU probe output is not JSON: {exc}") from exc
        except RecursionError:
            raise GpuProbeError("the GPU probe output is not JSON: nested too deep") from None
    if not isinstance(doc, dict):
        raise GpuProbeError(f"the GPU probe output must be a JSON object, got {type(doc).__name__}")
    if doc.get("schema") != SCHEMA:
        raise GpuProbeError(f"schema is {doc.get('schema')!r}; expected '{SCHEMA}'")
    if doc.get("schema_version") not in SCHEMA_VERSIONS:
        raise GpuProbeError(f"schema_version {doc.get('schema_version')!r} is not one of {list(SCHEMA_VERSIONS)}")
    gpus = doc.get("gpus")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise GpuProbeError("gpus must be a list of objects")
    out = dict(doc)
    out["gpus"] = []
    for i, gpu in enumerate(gpus):
        gpu = dict(gpu)
        for key in ("h2d_gbps", "d2h_gbps"):
            gpu[key] = _number(gpu.get(key), f"gpus[{i}].{key}")
        copy = gpu.get("device_copy")
        if copy is not None:
            if not isinstance(copy, dict):
                raise GpuProbeError(f"gpus[{i}].device_copy must be an object")
            _number(copy.get("copy_gbps"), f"gpus[{i}].device_copy.copy_gbps")
        link = gpu.get("pcie") if isinstance(gpu.get("pcie"), dict) else {}
        gpu["pcie_parsed"] = {
            "current_speed_gts": _speed(link.get("current_link_speed")),
            "max_speed_gts": _speed(link.get("max_link_speed")),
            "current_width": _width(link.get("current_link_width")),
            "max_width": _width(link.get("max_link_width")),
        }
        out["gpus"].append(gpu)
    allreduce = doc.get("allreduce")
    if allreduce is not None:
        if not isinstance(allreduce, dict):
            raise GpuProbeError("allreduce must be an object or null")
        for key in ("rows", "plain"):
            rows = allreduce.get(key) or []
            if not isinstance(rows, list):
                raise GpuProbeError(f"allreduce.{key} must be a list")
            for j, row in enumerate(rows):
                if not isinstance(row, dict) or not isinstance(row.get("bytes"), int):
                    raise GpuProbeError(f"allreduce.{key}[{j}] needs an integer 'bytes'")
                _number(row.get("busbw_gbps"), f"allreduce.{key}[{j}].busbw_gbps")
    if not isinstance(doc.get("errors", []), list):
        raise GpuProbeError("errors must be a list")
    return out
