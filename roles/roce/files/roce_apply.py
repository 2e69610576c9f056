# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-apply the lossless RoCE plan and log drift (installed by the gpufabric.rollout roce role).

Usage: python3 /usr/local/lib/gpufabric/roce_apply.py [--check] [PLAN]   (default PLAN: /etc/gpufabric/roce/plan.json)

gpufabric-roce.service runs it at boot and whenever openibd (re)loads the NIC driver. It runs
the same engine as the roce_qos/pcie_acs modules (the collection's module_utils files
_qos_engine.py and what it imports, installed below /usr/local/lib/gpufabric/ansible_collections)
on the same plan the role applied: read, diff, apply what differs, read back. Every difference
found is logged as a "drift" line (to the journal when run by the service). Exit status 0 when
the host matches the plan afterwards.
"""

import json
import os
import sys

sys.path.insert(0, os.environ.get("GPUFABRIC_ROCE_LIB", "/usr/local/lib/gpufabric"))

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import pcie_acs as _pcie_acs
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import parse_rdma_system
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import ACS_REDIRECT_MASK
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import host as _host
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

# Tools are looked up on the usual sbin/bin path (tests point GPUFABRIC_ROCE_PATH elsewhere).
SBIN_PATH = os.environ.get("GPUFABRIC_ROCE_PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
ERRORS = (*_qos_engine.ENGINE_ERRORS, _pcie_acs.AcsError)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    plan_path = args[0] if args else "/etc/gpufabric/roce/plan.json"
    with open(plan_path) as handle:
        plan = json.load(handle)
    runner = _host.Runner.local(path=SBIN_PATH)
    io = _host.Host(_host.Sysroot(plan.get("sysroot", "/")), runner)
    status = 0
    try:
        result = _qos_engine.run_plan_interfaces(plan.get("interfaces") or [], plan.get("backend", "auto"), io, check)
        for line in _qos_engine.drift_lines(result):
            print(line)
        for warning in result["warnings"]:
            print("warning: " + warning)
        changed = sum(1 for i in result["interfaces"] if i["changed_keys"])
        print(
            f"gpufabric-roce: {len(result['interfaces'])} interfaces via {result['backend']}, "
            f"{changed} {'would be ' if check else ''}re-applied"
        )
    except ERRORS as exc:
        print(f"gpufabric-roce: QoS apply failed: {exc}")
        status = 1
    acs = plan.get("acs") or {}
    if acs.get("endpoints"):
        try:
            bridges = _pcie_acs.upstream_bridges(io.sysroot, acs["endpoints"])
            out = _pcie_acs.run_acs(bridges, acs.get("clear_mask", ACS_REDIRECT_MASK), runner, check)
            for bridge in out["bridges"]:
                if bridge.get("before") != bridge.get("after"):
                    print(f"drift acs {bridge['bdf']}: {bridge['before']} -> {bridge['after']}")
        except ERRORS as exc:
            print(f"gpufabric-roce: ACS apply failed: {exc}")
            status = 1
    if plan.get("netns_mode"):
        rc, out, _err = runner.run(["rdma", "system", "show"])
        if rc == 0:
            try:
                mode = parse_rdma_system(out)["netns"]
            except ParseError as exc:
                print(f"gpufabric-roce: {exc.within('rdma system show')}")
                return 1
            if mode != plan["netns_mode"]:
                print(f"drift rdma netns: {mode} (wanted {plan['netns_mode']}; check the ib_core netns_mode option)")
                status = 1
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
