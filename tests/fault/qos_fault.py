"""The QoS faults of the lab's NICs, injected from the test side on a node: drift (PFC and ECN off,
as after a firmware reset) and an mlnx_qos that fails the PFC call of one NIC. The wrapper takes
the simulator's place in /usr/local/sbin (first on root's PATH) and runs the simulator for every
other call; remove_pfc_failure puts the simulator back."""

from __future__ import annotations

import json
from typing import Dict, List

from host_lab import SYSROOT, HostLab

ROCE_PLAN = "/etc/gpufabric/roce/plan.json"
TOOL = "/usr/local/sbin/mlnx_qos"
ASIDE = "/usr/local/lib/gpufabric-fault/mlnx_qos"
NET = f"{SYSROOT}/sys/class/net"

WRAPPER = """#!/bin/sh
# Fault injected by tests/fault (removed after the case): the PFC call of {nic} fails.
case " $* " in
  *" -i {nic} "*"--pfc "*) echo "Netlink error: Operation not permitted (injected fault)"; exit 1 ;;
esac
exec {aside} "$@"
"""


def drift_qos(lab: HostLab, node: str, nics: List[str]) -> None:
    """PFC off on every priority and ECN off on priority 3, on each NIC (the simulator's state)."""
    for nic in nics:
        state = f"{NET}/{nic}/lab_dcbnl.json"
        current = json.loads(lab.sh(node, f"cat {state}"))
        current["pfc_en"] = 0
        lab.sh(node, f"cat > {state} <<'EOF'\n{json.dumps(current)}\nEOF")
        lab.sh(node, f"for p in roce_np roce_rp; do echo 0 > {NET}/{nic}/ecn/$p/enable/3; done")


def inject_pfc_failure(lab: HostLab, node: str, nic: str) -> None:
    lab.sh(node, f"mkdir -p {ASIDE.rsplit('/', 1)[0]} && mv {TOOL} {ASIDE}")
    lab.sh(node, f"cat > {TOOL} <<'EOF'\n{WRAPPER.format(nic=nic, aside=ASIDE)}EOF\nchmod 0755 {TOOL}")


def remove_pfc_failure(lab: HostLab, node: str) -> None:
    lab.sh(node, f"if [ -e {ASIDE} ]; then mv -f {ASIDE} {TOOL} && rmdir {ASIDE.rsplit('/', 1)[0]}; fi")


def nic_qos(lab: HostLab, node: str, nic: str) -> Dict[str, object]:
    """PFC flags per priority and the ECN enable of priority 3 (both points) as the NIC has them."""
    state = json.loads(lab.sh(node, f"cat {NET}/{nic}/lab_dcbnl.json"))
    ecn = lab.sh(node, f"cat {NET}/{nic}/ecn/roce_np/enable/3 {NET}/{nic}/ecn/roce_rp/enable/3").split()
    return {"pfc": [state["pfc_en"] >> p & 1 for p in range(8)], "ecn3": min(int(v) for v in ecn)}
