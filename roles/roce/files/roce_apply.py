# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-apply the lossless RoCE plan at boot and log drift (installed by the gpufabric.rollout roce role).

Usage: python3 /usr/local/lib/gpufabric/roce_apply.py [--check] [PLAN]   (default PLAN: /etc/gpufabric/roce/plan.json)

Runs the same engine as the roce_qos/pcie_acs modules (gpufabric_qos.py, a copy of the
collection's plugins/module_utils/_qos.py) on the same plan the role applied: read, diff, apply
what differs, read back. Every difference found is logged as a "drift" line (to the journal
when run by gpufabric-roce.service). Exit status 0 when the host matches the plan afterwards.
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.environ.get("GPUFABRIC_ROCE_LIB", "/usr/local/lib/gpufabric"))

import gpufabric_qos as qos

# Tools are looked up on the usual sbin/bin path (tests point GPUFABRIC_ROCE_PATH elsewhere).
SBIN_PATH = os.environ.get("GPUFABRIC_ROCE_PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


def run(argv):
    env = dict(os.environ, LC_ALL="C", PATH=SBIN_PATH)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    plan_path = args[0] if args else "/etc/gpufabric/roce/plan.json"
    with open(plan_path) as handle:
        plan = json.load(handle)
    io = qos.HostIO(run=run, which=lambda name: shutil.which(name, path=SBIN_PATH), sysroot=plan.get("sysroot", "/"))
    status = 0
    try:
        result = qos.run_plan_interfaces(plan.get("interfaces") or [], plan.get("backend", "auto"), io, check)
        for line in qos.drift_lines(result):
            print(line)
        for warning in result["warnings"]:
            print("warning: " + warning)
        changed = sum(1 for i in result["interfaces"] if i["changed_keys"])
        print(
            f"gpufabric-roce: {len(result['interfaces'])} interfaces via {result['backend']}, "
            f"{changed} {'would be ' if check else ''}re-applied"
        )
    except (qos.QosError, OSError) as exc:
        print(f"gpufabric-roce: QoS apply failed: {exc}")
        status = 1
    acs = plan.get("acs") or {}
    if acs.get("endpoints"):
        try:
            bridges = qos.upstream_bridges(io, acs["endpoints"])
            out = qos.run_acs(bridges, acs.get("clear_mask", qos.ACS_REDIRECT_MASK), io, check)
            for bridge in out["bridges"]:
                if bridge.get("before") != bridge.get("after"):
                    print(f"drift acs {bridge['bdf']}: {bridge['before']} -> {bridge['after']}")
        except (qos.QosError, OSError) as exc:
            print(f"gpufabric-roce: ACS apply failed: {exc}")
            status = 1
    if plan.get("netns_mode"):
        rc, out, _err = run(["rdma", "system", "show"])
        if rc == 0:
            mode = qos.parse_rdma_system(out)["netns"]
            if mode != plan["netns_mode"]:
                print(f"drift rdma netns: {mode} (wanted {plan['netns_mode']}; check the ib_core netns_mode option)")
                status = 1
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
