# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe ACS redirect: find the bridges above GPUs and NICs, read and clear their ACS Control bits.

``setpci -s BDF ECAP_ACS+0x6.w`` (pciutils setpci(8)) prints the 16-bit ACS Control register as
4 hex digits; the bits are linux include/uapi/linux/pci_regs.h ``PCI_ACS_*``. Used by the
``pcie_acs`` module and the boot-time RoCE re-apply script (read -> diff -> write -> read back).

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from ansible_collections.gpufabric.rollout.plugins.module_utils._host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils._parse import ParseError, as_text
from ansible_collections.gpufabric.rollout.plugins.module_utils._topology_parsers import ACS_REDIRECT_MASK, BDF

ACS_REGISTER = "ECAP_ACS+0x6.w"


class AcsError(Exception):
    """An ACS Control register does not hold what was written to it."""


def parse_setpci_word(text: Any) -> int:
    """``setpci -s BDF ECAP_ACS+0x6.w`` prints one 16-bit value as 4 hex digits; ParseError otherwise."""
    text = as_text(text, "setpci output")
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not re.fullmatch(r"[0-9a-fA-F]{1,4}", value):
        raise ParseError("setpci printed no 16-bit value", line=value, lineno=1)
    return int(value, 16)


def upstream_bridges(sr: Sysroot, endpoints: List[str]) -> List[str]:
    """Bridges between each endpoint and its host bridge, from the sysfs device path
    (sys/bus/pci/devices/BDF resolves to devices/pci0000:17/<root port>/<switch ports>/<endpoint>)."""
    bridges = set()
    for bdf in endpoints:
        link = f"sys/bus/pci/devices/{bdf}"
        real = sr.real(link) if sr.isdir(link) else None
        if not real:
            continue
        for comp in real.split("/")[:-1]:
            if BDF.match(comp):
                bridges.add(comp)
    return sorted(bridges)


def _read(runner: Runner, bdf: str) -> int:
    argv = ["setpci", "-s", bdf, ACS_REGISTER]
    try:
        return parse_setpci_word(runner.check(argv))
    except ParseError as exc:
        raise exc.within(" ".join(argv)) from None


def run_acs(bridges: List[str], clear_mask: int, runner: Runner, check_mode: bool) -> Dict[str, Any]:
    """Clear the ACS redirect bits on each bridge (setpci read -> diff -> write -> read back)."""
    results = []
    changed_any = False
    for bdf in bridges:
        rc, out, err = runner.run(["setpci", "-s", bdf, ACS_REGISTER])
        if rc != 0 or not out.strip():
            results.append(
                {"bdf": bdf, "skipped": f"no ACS capability ({(err or out).strip()})", "before": None, "after": None}
            )
            continue
        try:
            before = parse_setpci_word(out)
        except ParseError as exc:
            raise exc.within(f"setpci -s {bdf} {ACS_REGISTER}") from None
        want = before & ~clear_mask & 0xFFFF
        after = before
        if want != before:
            changed_any = True
            if check_mode:
                after = want
            else:
                runner.check(["setpci", "-s", bdf, f"{ACS_REGISTER}={want:04x}"])
                after = _read(runner, bdf)
                if after != want:
                    raise AcsError(f"{bdf}: ACS control reads {after:04x} after writing {want:04x}")
        results.append(
            {
                "bdf": bdf,
                "before": f"{before:04x}",
                "after": f"{after:04x}",
                "redirect": bool(after & ACS_REDIRECT_MASK),
            }
        )
    return {"changed": changed_any, "bridges": results}
