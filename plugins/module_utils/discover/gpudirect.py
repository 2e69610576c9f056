# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect RDMA: read the driver facts and decide DMA-BUF or nvidia-peermem.

The requirements: docs/facts.md, "GPUDirect RDMA: nvidia-peermem and DMA-BUF".

DMA-BUF needs the open GPU kernel module, CUDA >= 11.7, a Turing or newer GPU and Linux
>= 5.12; it works with inbox RDMA drivers. nvidia-peermem needs MOFED/DOCA-OFED's ib_core
(the peer-memory client API) and an NVIDIA driver built after MOFED was installed, else
``modprobe`` fails with "Invalid argument". NVIDIA recommends DMA-BUF, so ``auto`` picks it
whenever the host qualifies. GDS (nvidia-fs) is gated here too: since GPU Operator v23.9.1
it needs the open kernel module, and P2PDMA mode needs CUDA >= 12.8, R565+ open and 6.2+.

Parsers here (``/proc/driver/nvidia/version``, ``modinfo``, ``nvidia-smi``, ``/proc/modules``,
version strings) return their documented "unknown" values (None, ``()``, ``{}``) for text they
cannot read, except ``parse_smi_gpus``, which raises ParseError naming the line.

Pure Python (>= 3.8), no Ansible imports; host files are read through ``_host.Sysroot``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import (
    ParseError,
    as_text,
    numbered,
    version_numbers,
)

# Lowest CUDA version a driver branch supports (CUDA toolkit release notes, "CUDA Toolkit and
# Corresponding Driver Versions"); used only when nvidia-smi did not report it.
_BRANCH_CUDA: List[Tuple[int, str]] = [
    (580, "13.0"),
    (575, "12.9"),
    (570, "12.8"),
    (560, "12.6"),
    (555, "12.5"),
    (550, "12.4"),
    (545, "12.3"),
    (535, "12.2"),
    (530, "12.1"),
    (525, "12.0"),
    (520, "11.8"),
    (515, "11.7"),
    (510, "11.6"),
    (495, "11.5"),
    (470, "11.4"),
    (465, "11.3"),
    (460, "11.2"),
    (455, "11.1"),
    (450, "11.0"),
]

# GPU generation by model name (order matters: first match wins) → (architecture, compute major).
_ARCH_BY_MODEL: List[Tuple[str, str, int]] = [
    (r"\bG?B\d{3}\b|\bRTX PRO 6000 Blackwell|\bGB10\b", "blackwell", 10),
    (r"\bG?H\d{3}\b|\bH20\b|\bH800\b", "hopper", 9),
    (r"\bL40S?\b|\bL4\b|\bL20\b|RTX (A|\d)?\d{3,4} Ada|RTX 40\d0", "ada", 8),
    (r"\bA\d{2,3}\b|\bA800\b|RTX A\d{4}|RTX 30\d0", "ampere", 8),
    (r"\bT4\b|RTX 20\d0|Quadro RTX", "turing", 7),
    (r"\bV100\b|TITAN V", "volta", 7),
    (r"\bP\d{2,3}\b|\bP100\b", "pascal", 6),
]
_ARCH_ORDER = ["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"]

METHODS = ("auto", "dmabuf", "peermem")


def cuda_for_driver(driver_version: Optional[str]) -> Optional[str]:
    branch = version_numbers(driver_version)[:1]
    if not branch:
        return None
    for low, cuda in _BRANCH_CUDA:
        if branch[0] >= low:
            return cuda
    return None


def gpu_arch(model: Optional[str], compute_cap: Optional[str] = None) -> Optional[str]:
    """Architecture from compute capability when known (exact), else from the model name."""
    cap = version_numbers(compute_cap)
    if cap:
        major, minor = cap[0], (cap[1] if len(cap) > 1 else 0)
        table = {
            3: "kepler",
            5: "maxwell",
            6: "pascal",
            7: "volta" if minor < 5 else "turing",
            8: "ada" if minor >= 9 else "ampere",
            9: "hopper",
            10: "blackwell",
            12: "blackwell",
        }
        return table.get(major)
    for pattern, arch, _major in _ARCH_BY_MODEL:
        if model and re.search(pattern, model):
            return arch
    return None


def parse_proc_version(text: Any) -> Dict[str, Optional[str]]:
    """/proc/driver/nvidia/version → {flavour: open|proprietary, version}; None for what it lacks."""
    text = as_text(text, "/proc/driver/nvidia/version")
    first = text.splitlines()[0] if text.strip() else ""
    match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)", first)
    version = match.group(1) if match else None
    if not first:
        flavour = None
    elif "Open Kernel Module" in first:
        flavour = "open"
    else:
        flavour = "proprietary"
    return {"flavour": flavour, "version": version}


def parse_modinfo(text: Any) -> Dict[str, str]:
    """`modinfo MODULE` → first value of each field (license, version, filename...)."""
    fields: Dict[str, str] = {}
    for line in as_text(text, "modinfo output").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return fields


def flavour_from_license(license_text: Optional[str]) -> Optional[str]:
    if not license_text:
        return None
    return "open" if "GPL" in license_text or "MIT" in license_text else "proprietary"


def parse_cuda_from_smi(text: Any) -> Optional[str]:
    """The ``CUDA Version: 13.0`` of plain ``nvidia-smi`` output, or None."""
    match = re.search(r"CUDA Version:\s*([0-9]{1,9}\.[0-9]{1,9})", as_text(text, "nvidia-smi output"))
    return match.group(1) if match else None


def parse_smi_gpus(text: Any) -> List[Dict[str, Optional[str]]]:
    """``nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader`` → [{model, compute_cap}].

    ``[N/A]``-style or empty capabilities are None; a line without a name or with another value
    as capability is a ParseError naming it.
    """
    gpus: List[Dict[str, Optional[str]]] = []
    for lineno, line in numbered(as_text(text, "nvidia-smi output")):
        if not line.strip():
            continue
        name, sep, cap = line.rpartition(",")
        name, cap = name.strip(), cap.strip()
        if not sep or not name:
            raise ParseError("expected 'name, compute capability'", line=line, lineno=lineno)
        if cap.startswith("[") or not cap:
            cap = None
        elif not re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,3}", cap):
            raise ParseError(f"compute capability {cap!r} is not like 9.0", line=line, lineno=lineno)
        gpus.append({"model": name, "compute_cap": cap})
    return gpus


def loaded_modules(proc_modules: Any) -> List[str]:
    return [line.split()[0] for line in as_text(proc_modules, "/proc/modules").splitlines() if line.strip()]


def read_host(sr: Sysroot) -> Dict[str, Any]:
    """What the decision needs that sysfs/procfs below ``sr`` tell directly (no commands run)."""
    proc_version = sr.text("proc/driver/nvidia/version")
    driver = parse_proc_version(proc_version or "")
    if not driver["version"]:
        driver["version"] = sr.read("sys/module/nvidia/version") or None
    modules = loaded_modules(sr.text("proc/modules") or "")
    sys_modules = set(sr.listdir("sys/module"))
    # A captured tree may lack osrelease; the running kernel is the one that matters then.
    kernel = sr.read("proc/sys/kernel/osrelease") or os.uname().release
    return {
        "driver_loaded": proc_version is not None or "nvidia" in sys_modules,
        "driver_module_loaded": "nvidia" in sys_modules or "nvidia" in modules,
        "driver_version_file": proc_version is not None,
        "driver_version_line": (proc_version or "").splitlines()[0][:120] if (proc_version or "").strip() else None,
        "driver_flavour": driver["flavour"],
        "driver_version": driver["version"],
        "kernel_release": kernel,
        "modules": sorted(set(modules) | {m for m in sys_modules if m.startswith(("nvidia", "ib_", "mlx", "rdma"))}),
        "peermem_loaded": "nvidia_peermem" in sys_modules or "nvidia_peermem" in modules,
        "nvidia_fs_loaded": "nvidia_fs" in sys_modules or "nvidia_fs" in modules,
        "nvidia_fs_version": sr.read("proc/driver/nvidia-fs/version") or None,
    }


def driver_state(facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The one rule for "NVIDIA driver present / loaded / version known", from gpudirect facts.

    ``present``: the nvidia kernel module is loaded, or installed for the running kernel
    (``driver_module_file``, from ``modinfo -n nvidia``; None when unknown). ``loaded``: the module
    is loaded (/sys/module/nvidia or /proc/modules). ``version``: from /proc/driver/nvidia/version,
    else /sys/module/nvidia/version. ``text`` says the state in the same words whichever mode asks.
    Facts gathered before these keys existed fall back on ``driver_loaded``/``driver_version``."""
    version = facts.get("driver_version") or None
    flavour = facts.get("driver_flavour") or None
    loaded = bool(facts.get("driver_module_loaded", facts.get("driver_loaded")) or version)
    version_file = facts.get("driver_version_file", version is not None)
    module_file = facts.get("driver_module_file") or None
    if loaded and version:
        text = " ".join(["driver", *[x for x in (flavour, version) if x], "loaded"])
    elif loaded:
        if version_file:
            why = "/proc/driver/nvidia/version names no version: {!r}".format(facts.get("driver_version_line") or "")
        else:
            why = "/proc/driver/nvidia/version is missing, and so is /sys/module/nvidia/version"
        text = f"the nvidia kernel module is loaded, but its driver version is unknown ({why})"
    elif module_file:
        text = f"the nvidia kernel module is installed ({module_file}) but not loaded"
    else:
        text = "no NVIDIA driver is loaded (no nvidia kernel module is loaded; /proc/driver/nvidia/version is missing)"
    return {
        "present": loaded or bool(module_file),
        "loaded": loaded,
        "version": version if loaded else None,
        "flavour": flavour if loaded else None,
        "module_file": module_file,
        "text": text,
    }


def _dmabuf_blockers(
    facts: Mapping[str, Any],
    flavour: Any,
    kernel: Tuple[int, ...],
    cuda: Tuple[int, ...],
    gpus: List[Any],
    archs: List[Any],
) -> List[str]:
    """Why DMA-BUF cannot be used (none: it can)."""
    dmabuf: List[str] = []
    if not facts.get("driver_version"):
        dmabuf.append("no NVIDIA driver found (/proc/driver/nvidia/version missing)")
    if flavour != "open":
        dmabuf.append(f"the NVIDIA driver is not the open kernel module (flavour: {flavour or 'unknown'})")
    if not kernel:
        dmabuf.append("kernel version unknown")
    elif kernel < (5, 12):
        dmabuf.append(f"kernel {facts.get('kernel_release')} is older than 5.12")
    if not cuda:
        dmabuf.append("CUDA version unknown")
    elif cuda < (11, 7):
        dmabuf.append(f"CUDA {'.'.join(map(str, cuda))} is older than 11.7")
    if not gpus:
        dmabuf.append("no GPUs in the facts")
    for gpu, arch in zip(gpus, archs):
        if arch is None:
            dmabuf.append(f"GPU {gpu.get('model')!r}: architecture unknown")
        elif _ARCH_ORDER.index(arch) < _ARCH_ORDER.index("turing"):
            dmabuf.append(f"GPU {gpu.get('model')} is {arch}, older than Turing")

    return dmabuf


def _peermem_blockers(facts: Mapping[str, Any]) -> List[str]:
    """Why nvidia-peermem cannot be used (none: it can)."""
    peermem: List[str] = []
    if not facts.get("driver_version"):
        peermem.append("no NVIDIA driver found")
    if not facts.get("mofed"):
        peermem.append("MOFED/DOCA-OFED is not installed: inbox ib_core lacks the peer-memory API nvidia-peermem needs")
    if facts.get("peermem_available") is False:
        peermem.append("nvidia-peermem.ko is not installed for the running kernel")

    return peermem


def _p2pdma_blockers(
    facts: Mapping[str, Any], flavour: Any, kernel: Tuple[int, ...], cuda: Tuple[int, ...]
) -> List[str]:
    """Why GDS cannot use PCIe P2PDMA (none: it can)."""
    p2pdma: List[str] = []
    if flavour != "open":
        p2pdma.append("needs the open kernel module")
    if version_numbers(facts.get("driver_version"))[:1] and version_numbers(facts.get("driver_version"))[0] < 565:
        p2pdma.append("needs driver R565 or newer")
    if not cuda or cuda < (12, 8):
        p2pdma.append("needs CUDA 12.8 or newer")
    if not kernel or kernel < (6, 2):
        p2pdma.append("needs kernel 6.2 or newer")

    return p2pdma


def _choose(result: Dict[str, Any], method: str, dmabuf: List[str], peermem: List[str]) -> None:
    """Set the result's method (or its error) and reasons for the asked ``method``."""
    if method == "auto":
        if not dmabuf:
            result["method"] = "dmabuf"
            result["reasons"].append(
                "DMA-BUF qualifies (open module, kernel >= 5.12, CUDA >= 11.7, Turing+); "
                "NVIDIA recommends it over nvidia-peermem"
            )
        elif not peermem:
            result["method"] = "peermem"
            result["reasons"].append("DMA-BUF is not possible (" + "; ".join(dmabuf) + "); nvidia-peermem is")
        else:
            result["error"] = (
                "neither DMA-BUF nor nvidia-peermem is possible: DMA-BUF: "
                + "; ".join(dmabuf)
                + ". nvidia-peermem: "
                + "; ".join(peermem)
            )
    else:
        blockers = dmabuf if method == "dmabuf" else peermem
        if blockers:
            result["error"] = f"{method} was requested but is not possible: " + "; ".join(blockers)
        else:
            result["method"] = method
            result["reasons"].append(f"{method} requested and possible")


def decide(facts: Dict[str, Any], method: str = "auto") -> Dict[str, Any]:
    """Choose the GPUDirect RDMA mechanism.

    ``facts`` keys: driver_flavour (open|proprietary|None), driver_version, cuda_version,
    kernel_release, gpus ([{model, compute_cap}]), mofed (bool: MOFED/DOCA-OFED ib_core with
    peer memory), peermem_available (bool|None: the module file exists for this kernel).
    Returns {method, dmabuf: {ok, blockers}, peermem: {ok, blockers}, gds: {...}, reasons}.
    ``method`` is None when the asked method is impossible; ``error`` then says why.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    flavour = facts.get("driver_flavour")
    kernel = version_numbers(facts.get("kernel_release"))
    cuda = version_numbers(facts.get("cuda_version")) or version_numbers(cuda_for_driver(facts.get("driver_version")))
    gpus = facts.get("gpus") or []
    archs = [gpu_arch(g.get("model"), g.get("compute_cap")) for g in gpus]

    dmabuf = _dmabuf_blockers(facts, flavour, kernel, cuda, gpus, archs)
    peermem = _peermem_blockers(facts)
    p2pdma = _p2pdma_blockers(facts, flavour, kernel, cuda)

    result: Dict[str, Any] = {
        "requested": method,
        "cuda_version": ".".join(map(str, cuda)) if cuda else None,
        "gpu_archs": archs,
        "dmabuf": {"ok": not dmabuf, "blockers": dmabuf},
        "peermem": {"ok": not peermem, "blockers": peermem},
        "gds": {
            "nvidia_fs_ok": flavour == "open",
            "nvidia_fs_blockers": []
            if flavour == "open"
            else ["nvidia-fs (GDS) needs the open GPU kernel module (GPU Operator >= 23.9.1 requires it)"],
            "p2pdma_ok": not p2pdma,
            "p2pdma_blockers": p2pdma,
        },
        "method": None,
        "error": None,
        "reasons": [],
    }
    _choose(result, method, dmabuf, peermem)
    return result


INVALID_ARGUMENT_HINT = (
    "modprobe nvidia-peermem failed with 'Invalid argument': the NVIDIA driver's nvidia-peermem was built "
    "before MOFED/DOCA-OFED was installed (or against inbox ib_core), so it lacks the peer-memory symbols. "
    "Fix: install MOFED/DOCA-OFED first, then rebuild the NVIDIA DKMS modules for this kernel "
    "(e.g. `dkms status`, then `dkms remove nvidia/<ver> --all && dkms install nvidia/<ver> -k $(uname -r)`, "
    "or reinstall the driver package), and load nvidia-peermem again."
)


def classify_modprobe_error(stderr: str) -> Optional[str]:
    """Name a known nvidia-peermem load failure."""
    low = (stderr or "").lower()
    if "invalid argument" in low:
        return "built_before_mofed"
    if "not found" in low:
        return "module_missing"
    if "unknown symbol" in low:
        return "unknown_symbol"
    return None
