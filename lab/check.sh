#!/usr/bin/env bash
# The main job end to end on the embedded lab, as a test (`make lab-test`, part of `make test`):
#   1. make lab's steps: nodes, the lab cluster, prepare, site.yml (must succeed);
#   2. site.yml again: must change nothing (changed=0 on every host) and reuse the first run's
#      measurement (validate_reuse_hours), saying so;
#   3. site.yml --check on the converged lab: must report nothing to change;
#   3b. the device allocation changed to DRA (lab/dra.yml), as a maintenance window does it with the
#      GPU Operator release the collection pins: site.yml converges in dra mode (the GPUCluster
#      instead of the ClusterPolicy, dranet, the DeviceClasses and claim templates, the NCCL Jobs
#      on claims), a second run changes nothing and reuses its measurement, and --check reports
#      nothing to change; steps 4 and 5 then run in dra mode;
#   4. bad intent (lab/bad_intent.py: typos and wrong values of each group of variables): each
#      site.yml run must fail in the plan, no host changed, no file written on the nodes, no object
#      the collection owns written to the API server;
#   5. one NIC of the last node trained down to x8 and another one cabled to the first node's port
#      (the lldpctl stand-in's fault file): playbooks/validate.yml must measure again (the node's
#      hardware changed) and fail, naming the node, the NIC and the figure, and the miscabled NIC
#      with the found and the expected switch port, while the first node's cabling passes (the
#      healthy runs above passed every gate, the cabling by LLDP included);
# then the lab is removed. LAB_CHECK_STEPS=runs stops after step 3b (steps 4 and 5 prove the plan's
# refusals and the gates, which the unit tests prove on every core of the support matrix).
# LAB_LATER_CONNECTION=mitogen runs steps 3 to 5 over that transport.
# LAB_RERUN_VENV=.lab/cores/<version> makes step 2 run on that core (make test: the oldest), so
# that one lab proves both ends of the support matrix. Exits 1 naming the run and the hosts that
# changed or failed; the logs stay in .lab/check/. LAB_NODES and LAB_INVENTORY run it on other node
# names (lab/lab.sh).
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"
logs="${LAB_STATE}/check"
mkdir -p "${logs}"

# The PLAY RECAP lines of a log whose changed, failed or unreachable count is not 0.
not_clean() {
    sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1" | awk '/^PLAY RECAP/ {r=1; next} r && NF == 0 {r=0} r' |
        grep -vE 'changed=0 +unreachable=0 +failed=0' || true
}

# The failed tasks of a log, each after the TASK line it belongs to, so that a CI log that keeps
# only the end of the output still names what failed (the report printed last would hide it).
failed_tasks() {
    sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1" | awk '
        /^TASK \[/ {task=$0; next}
        /^(fatal|failed): |^ERROR! |FAILED! =>/ {if (task != shown) {print "--- " task; shown=task}; print substr($0, 1, 2000)}' |
        tail -n 40
}

# A run must end with a recap, every host failed=0 unreachable=0 (and changed=0 with "idle").
run() { # ID NAME MODE COMMAND...
    local name="$2" mode="$3" log="${logs}/$1.log" start="${SECONDS}" bad
    shift 3
    if ! "$@" >"${log}" 2>&1; then
        tail -n 30 "${log}" >&2
        failed_tasks "${log}" >&2
        die "${name}: failed (log ${log})"
    fi
    grep -q '^PLAY RECAP' "${log}" || die "${name}: no play recap in ${log}"
    if [[ "${mode}" == idle ]]; then
        bad="$(not_clean "${log}")"
    else
        bad="$(sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "${log}" | grep -E 'unreachable=[1-9]|failed=[1-9]' || true)"
    fi
    [[ -z "${bad}" ]] || die "${name}: expected every host clean, got:"$'\n'"${bad}"$'\n'"(log ${log})"
    log "${name}: passed in $((SECONDS - start)) s"
}

trap '"${LAB_ROOT}/lab.sh" down >/dev/null 2>&1 || true' EXIT
# The first run measures (a record left by an earlier `make lab` would let it reuse that measurement).
rm -f "${LAB_STATE}/validation-record.json"
run first "first run (make lab)" any "${LAB_ROOT}/lab.sh" up
# LAB_RERUN_VENV: the rerun on another core of the support matrix (make test: the oldest). The
# converged lab must look converged to that core's modules and templates too.
if [[ -n "${LAB_RERUN_VENV:-}" ]]; then
    [[ -x "${LAB_RERUN_VENV}/bin/ansible-playbook" ]] || die "LAB_RERUN_VENV: no ansible-playbook in ${LAB_RERUN_VENV}/bin"
    rerun_core="$("${LAB_RERUN_VENV}/bin/python" -c 'import ansible.release as r; print(r.__version__)')"
    run second "second run on ansible-core ${rerun_core} (changes nothing)" idle \
        env LAB_VENV="${LAB_RERUN_VENV}" "${LAB_ROOT}/lab.sh" site
else
    run second "second run (changes nothing)" idle "${LAB_ROOT}/lab.sh" site
fi
# The first run measured; the second changed nothing, so it reuses that measurement and says so.
for pair in "first:Figures measured now (no earlier measurement on record)" \
    "second:Figures reused from the measurement of"; do
    grep -qF -- "${pair#*:}" "${logs}/${pair%%:*}.log" ||
        die "${pair%%:*} run: the validation summary does not say '${pair#*:}' (log ${logs}/${pair%%:*}.log)"
done
# LAB_LATER_CONNECTION: the transport of steps 3 to 5 (make test: mitogen, about half the cost per
# task; the first run and the rerun above stay on the lab's transport, SSH by default, what users run).
if [[ -n "${LAB_LATER_CONNECTION:-}" ]]; then
    export GPUFABRIC_LAB_CONNECTION="${LAB_LATER_CONNECTION}"
    log "steps 3 to 5 over ${LAB_LATER_CONNECTION} (LAB_LATER_CONNECTION)"
fi
run check "check mode on the converged lab (nothing to change)" idle "${LAB_ROOT}/lab.sh" site --check

# 3b. The same lab in dra mode. From here on every lab.sh run gets the dra intent (LAB_PLAYBOOK_ARGS).
export LAB_PLAYBOOK_ARGS="-e @${LAB_ROOT}/dra.yml"
run dra "site.yml in dra mode (the device allocation changed)" any "${LAB_ROOT}/lab.sh" site
# What changed, in the reports people read: the GPU stack, the rails' attachment and the NCCL Jobs.
for want in "device allocation: dra - GPUCluster/gpu-cluster" "claim (dra.net)" "GPU0 -> "; do
    grep -qF -- "${want}" "${LAB_STATE}/rollout-report.txt" ||
        die "dra mode: the rollout report ${LAB_STATE}/rollout-report.txt does not say '${want}'"
done
grep -qE -- "^ +NCCL all-reduce across nodes +[^ ]+ +[1-9][0-9]* +[1-9][0-9]* +0 " \
    "${LAB_STATE}/validation.txt" ||
    die "dra mode: the NCCL Jobs on claims did not pass (report ${LAB_STATE}/validation.txt)"
run dra-second "site.yml in dra mode again (changes nothing)" idle "${LAB_ROOT}/lab.sh" site
grep -qF -- "Figures reused from the measurement of" "${logs}/dra-second.log" ||
    die "dra mode: the second run did not reuse the first's measurement (log ${logs}/dra-second.log)"
run dra-check "check mode in dra mode (nothing to change)" idle "${LAB_ROOT}/lab.sh" site --check

case "${LAB_CHECK_STEPS:-all}" in
    all) ;;
    runs) exit 0 ;;
    *) die "LAB_CHECK_STEPS: 'all' or 'runs', got '${LAB_CHECK_STEPS}'" ;;
esac

# 4. Bad intent is refused before any change, on the converged lab.
start="${SECONDS}"
python "${LAB_ROOT}/bad_intent.py" || die "bad intent: not every case was refused before any change (logs .lab/bad-intent/)"
log "bad intent refused before any change: passed in $((SECONDS - start)) s"

# 5. A down-trained link (the commonest silent loss): the proof must catch it and name it.
read -r -a lab_nodes <<<"${LAB_NODES:-gpu-node-01 gpu-node-02}"
slow="${lab_nodes[-1]}"
podman exec "${slow}" sh -c \
    'echo 8 > /var/lib/gpufabric-lab/sysroot/sys/class/infiniband/mlx5_3/device/current_link_width' ||
    die "could not train mlx5_3 of ${slow} down to x8"
# And its rail-5 NIC cabled to the first node's rail-6 port (the maps: lab/cabling.py): lines of
# the netdev, the stand-in's fault file and what the failure must say.
cabling=/etc/gpufabric-lab/lldp-cabling.json
mapfile -t miscabling < <(
    FIRST="$(podman exec "${lab_nodes[0]}" cat "${cabling}")" SLOW="$(podman exec "${slow}" cat "${cabling}")" python3 -c '
import json, os
first, slow = json.loads(os.environ["FIRST"]), json.loads(os.environ["SLOW"])
netdev, right = next((k, v) for k, v in sorted(slow.items()) if v["rail"] == 5)
wrong = next(v for v in first.values() if v["rail"] == 6)
print(netdev)
print(json.dumps({netdev: {"switch": wrong["switch"], "port": wrong["port"]}}))
print("({}, rail 5): LLDP neighbour = {} {} (expected {} {})".format(netdev, wrong["switch"], wrong["port"], right["switch"], right["port"]))
')
[[ ${#miscabling[@]} -eq 3 ]] || die "could not read the cabling maps of ${lab_nodes[0]} and ${slow}"
podman exec -i "${slow}" sh -c 'cat > /etc/gpufabric-lab/lldp-miscabled.json' <<<"${miscabling[1]}" ||
    die "could not miscable ${miscabling[0]} of ${slow}"
start="${SECONDS}"
log_file="${logs}/degraded.log"
if "${LAB_ROOT}/lab.sh" validate >"${log_file}" 2>&1; then
    die "a NIC at x8: validate.yml passed (log ${log_file})"
fi
# (grep reads a file: `grep -q` at the end of a pipe may exit before the writer is done, and
# pipefail then reports the writer's SIGPIPE as a miss.)
sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "${log_file}" >"${log_file}.plain"
for want in "Validation failed" "FAIL host ${slow} mlx5_3: PCIe link at maximum" "FAIL rdma ${slow} mlx5_3:"; do
    grep -qF -- "${want}" "${log_file}.plain" ||
        die "a NIC at x8: validate.yml failed without naming '${want}' (log ${log_file})"
done
named="$(grep -F -- "FAIL cabling ${slow} mlx5_" "${log_file}.plain" | grep -cF -- "${miscabling[2]}" || true)"
[[ "${named}" -gt 0 ]] ||
    die "a miscabled NIC: validate.yml failed without naming ${miscabling[0]} of ${slow}: '${miscabling[2]}' (log ${log_file})"
grep -qF -- "== Cabling by LLDP ${lab_nodes[0]} (8/8 passed)" "${LAB_STATE}/validation.txt" ||
    die "a miscabled NIC on ${slow}: the report ${LAB_STATE}/validation.txt does not show ${lab_nodes[0]}'s cabling passing"
log "a NIC trained down to x8 and a miscabled NIC fail the proof, named: passed in $((SECONDS - start)) s"
