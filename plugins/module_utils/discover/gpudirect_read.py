# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's GPU driver read as the modules do it (``gpudirect_facts``, ``plan_facts``): sysfs and
procfs below the sysroot (``discover.gpudirect.read_host``), then ``modinfo``, ``nvidia-smi`` and
``ofed_info`` when installed, and the DMA-BUF / nvidia-peermem decision.

Runs on target hosts: Python >= 3.8, stdlib only; commands through ``shared.host.Runner``.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

SMI_GPU_QUERY = ["--query-gpu=name,compute_cap", "--format=csv,noheader"]
MOFED_SOURCE_TREE = "usr/src/ofa_kernel/default"  # MLNX_OFED/DOCA-OFED kernel sources


def gather(params: Mapping[str, Any], runner: Runner, files: Sysroot) -> Dict[str, Any]:
    """The facts for ``params`` (sysroot, method, gpus, cuda_version, mofed): /proc and /sys below
    ``params['sysroot']``, other host files below ``files`` (``/`` on a host), commands through
    ``runner``. ParseError names the command and line."""
    sysroot = params["sysroot"]
    host = _gpudirect.read_host(Sysroot(sysroot))
    modinfo = runner.which("modinfo")
    if modinfo and host["driver_flavour"] is None and host["driver_loaded"]:
        rc, out, _err = runner.run([modinfo, "-F", "license", "nvidia"])
        if rc == 0:
            host["driver_flavour"] = _gpudirect.flavour_from_license(out.strip())
    host["driver_module_file"] = None  # installed for the running kernel; None: not found or unknown
    if modinfo:
        rc, out, _err = runner.run([modinfo, "-n", "nvidia"])
        host["driver_module_file"] = out.strip() if rc == 0 and out.strip() else None
    peermem_available = None
    if modinfo:
        rc, out, _err = runner.run([modinfo, "-n", "nvidia-peermem"])
        peermem_available = rc == 0 and bool(out.strip())
    gpus = [{"model": g.get("model") or g.get("name"), "compute_cap": g.get("compute_cap")} for g in params["gpus"]]
    cuda = params["cuda_version"] or None
    smi = runner.which("nvidia-smi")
    if smi and not cuda:
        rc, out, _err = runner.run([smi])
        if rc == 0:
            cuda = _gpudirect.parse_cuda_from_smi(out)
    if smi and not gpus:
        rc, out, _err = runner.run([smi, *SMI_GPU_QUERY])
        if rc == 0:
            try:
                gpus = _gpudirect.parse_smi_gpus(out)
            except ParseError as exc:
                raise exc.within(" ".join(["nvidia-smi", *SMI_GPU_QUERY])) from None
    cuda_source = "nvidia-smi" if cuda and not params["cuda_version"] else ("parameter" if cuda else None)
    if not cuda:
        cuda = _gpudirect.cuda_for_driver(host["driver_version"])
        cuda_source = "driver branch" if cuda else None
    mofed = params["mofed"]
    mofed_version = None
    ofed_info = runner.which("ofed_info")
    if ofed_info:
        rc, out, _err = runner.run([ofed_info, "-s"])
        if rc == 0 and out.strip():
            mofed_version = out.strip().rstrip(":")
    if mofed is None:
        mofed = bool(mofed_version) or files.isdir(MOFED_SOURCE_TREE)
    facts = dict(host)
    facts.update(
        {
            "sysroot": sysroot,
            "cuda_version": cuda,
            "cuda_version_source": cuda_source,
            "gpus": gpus,
            "mofed": mofed,
            "mofed_version": mofed_version,
            "peermem_available": peermem_available,
        }
    )
    facts["decision"] = _gpudirect.decide(facts, params["method"])
    return facts
