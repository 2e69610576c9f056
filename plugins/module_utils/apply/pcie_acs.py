# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe ACS redirect: find the bridges above GPUs and NICs, read and clear their ACS Control bits.

``setpci -s BDF ECAP_ACS+0x6.w`` (pciutils setpci(8)) prints the 16-bit ACS Control register as
4 hex digits; the bits are linux include/uapi/linux/pci_regs.h ``PCI_ACS_*``. One call reads or
writes every bridge (``setpci -s A REG -s B REG ...``: a group per device, run in order), instead of
one process per bridge. Used by the
``pcie_acs`` module and the boot-time RoCE re-apply script (read -> diff -> write -> read back).

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Union

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import ACS_REDIRECT_MASK, BDF
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, as_text

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


def _batch(bridges: List[str], operation: Callable[[str], str]) -> List[str]:
    """One setpci call for several devices: an operation group (``-s BDF OPERATION``) per bridge.
    setpci runs the groups in order and prints one line per read (setpci.c ``execute``)."""
    argv = ["setpci"]
    for bdf in bridges:
        argv += ["-s", bdf, operation(bdf)]
    return argv


def _read_one(runner: Runner, bdf: str) -> Union[int, str]:
    """A bridge's ACS Control, or why it has none (the setpci call failed or printed nothing)."""
    argv = ["setpci", "-s", bdf, ACS_REGISTER]
    rc, out, err = runner.run(argv)
    if rc != 0 or not out.strip():
        return f"no ACS capability ({(err or out).strip()})"
    try:
        return parse_setpci_word(out)
    except ParseError as exc:
        raise exc.within(" ".join(argv)) from None


def read_registers(bridges: List[str], runner: Runner) -> Dict[str, Union[int, str]]:
    """Each bridge's ACS Control (int), or a str saying why it has none, in as few setpci calls as
    the bridges allow: setpci stops at the first device without an ACS capability (it names the
    device and exits 1 after printing the values before it), so that bridge is noted and the bridges
    after it are read in the next call. When setpci printed a number of values that does not say
    which bridge is missing (a device that went away is only warned about), each bridge of that
    call is read on its own."""
    found: Dict[str, Union[int, str]] = {}
    todo = list(bridges)
    while todo:
        argv = _batch(todo, lambda _bdf: ACS_REGISTER)
        rc, out, err = runner.run(argv)
        lines = [line for line in out.splitlines() if line.strip()]
        if (rc == 0 and len(lines) != len(todo)) or (rc != 0 and len(lines) >= len(todo)):
            found.update((bdf, _read_one(runner, bdf)) for bdf in todo)
            break
        for lineno, (bdf, line) in enumerate(zip(todo, lines), 1):
            try:
                found[bdf] = parse_setpci_word(line)
            except ParseError as exc:
                raise ParseError(exc.message, line=line.strip(), lineno=lineno, source=" ".join(argv)) from None
        if rc == 0:
            break
        found[todo[len(lines)]] = f"no ACS capability ({err.strip() or f'setpci exited {rc}'})"
        todo = todo[len(lines) + 1 :]
    return found


def run_acs(bridges: List[str], clear_mask: int, runner: Runner, check_mode: bool) -> Dict[str, Any]:
    """Clear the ACS redirect bits on each bridge: read them all, write those that differ in one
    setpci call, read those back (three calls at most when every bridge has ACS)."""
    before = read_registers(bridges, runner)
    want = {bdf: value & ~clear_mask & 0xFFFF for bdf, value in before.items() if isinstance(value, int)}
    writes = [bdf for bdf in bridges if bdf in want and want[bdf] != before[bdf]]
    after = dict(before)
    if writes and check_mode:
        after.update((bdf, want[bdf]) for bdf in writes)
    elif writes:
        runner.check(_batch(writes, lambda bdf: f"{ACS_REGISTER}={want[bdf]:04x}"))
        after.update(read_registers(writes, runner))
        for bdf in writes:
            if after[bdf] != want[bdf]:
                now = after[bdf] if isinstance(after[bdf], str) else f"{after[bdf]:04x}"
                raise AcsError(f"{bdf}: ACS control reads {now} after writing {want[bdf]:04x}")
    results = []
    for bdf in bridges:
        if isinstance(before[bdf], str):
            results.append({"bdf": bdf, "skipped": before[bdf], "before": None, "after": None})
            continue
        results.append(
            {
                "bdf": bdf,
                "before": f"{before[bdf]:04x}",
                "after": f"{after[bdf]:04x}",
                "redirect": bool(after[bdf] & ACS_REDIRECT_MASK),
            }
        )
    return {"changed": bool(writes), "bridges": results}
