#!/usr/bin/env bash
# Run molecule scenarios one after another (all of them, or those named), each with a fresh
# TMPDIR (kubernetes.core caches API discovery there), over the lab's transport
# (gpufabric_lab_connection, or GPUFABRIC_LAB_CONNECTION), and print a summary with durations.
#
# A scenario whose failure lies in the lab's own set-up steps (create, prepare: starting a
# podman node, laying down its simulated hardware) is run once more, and the summary says so
# with the first attempt's error. A failure in any step that exercises the collection (check,
# converge, idempotence, verify, side_effect, ...) is never retried.
# The last lines printed name each failed step and its first errors, so that a CI log that
# keeps only its tail still shows why.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}" || exit 1
# shellcheck source=lab/common.sh
source "${repo}/lab/common.sh"
# The lab's transport (gpufabric_lab_connection), read by the shared molecule config.
lab_connection_env
echo "lab nodes are reached with: ${GPUFABRIC_LAB_CONNECTION}"
# The CRDs the cluster scenarios apply (molecule/cluster_layer reads LAB_CRDS_DIR): the upstream
# ones when LAB_CRDS_DIR names them, else the lab's permissive stand-ins.
LAB_CRDS_DIR="$(lab_crds_dir)" || exit 1
export LAB_CRDS_DIR
if (($# > 0)) && [[ -n "$*" ]]; then
    scenarios=("$@")
else
    mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -rn1 basename | sort)
fi
((${#scenarios[@]} > 0)) || { echo "no molecule scenarios found" >&2; exit 1; }

plain() { sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1"; }

# The molecule step that failed in a scenario log ("create", "converge", ...), or nothing.
failed_step() {
    plain "$2" | grep -oE "^$1 > [a-z_]+: Executed: Failed" | head -n 1 | sed -E "s/^$1 > ([a-z_]+):.*/\1/"
}

# The first error lines of a log, one per line, shortened.
first_errors() {
    plain "$1" | grep -E 'fatal: |FAILED! |ERROR |Error: |failed=[1-9]|unreachable=[1-9]' \
        | sed -E 's/^[[:space:]│]+//' | cut -c1-400 | head -n "${2:-6}"
}

# Add a headline and the log's first errors to what the summary reports as having gone wrong.
diagnose() { # headline log
    diagnosis+=("$1")
    mapfile -t -O "${#diagnosis[@]}" diagnosis < <(first_errors "$2" | sed 's/^/    /')
}

run_one() { # scenario log: the log gets molecule's output, log.steps each step's seconds
    local tmp rc
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/molecule-$1.XXXXXX")"
    TMPDIR="${tmp}" molecule test -s "$1" 2>&1 | python3 lab/molecule/steps.py "$2" "$2.steps"
    rc=${PIPESTATUS[0]}
    rm -rf "${tmp}"
    return "${rc}"
}

# "create 12s, prepare 40s, ..." from a log's steps file.
step_times() {
    [[ -s "$1.steps" ]] && awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $1, $2 }' "$1.steps"
}

mkdir -p .lab/molecule
failed=() summary=() diagnosis=()
for s in "${scenarios[@]}"; do
    log=".lab/molecule/${s}.log"
    start=$(date +%s)
    echo "== molecule test -s ${s} (log: ${log})"
    result=passed note=""
    if ! run_one "${s}" "${log}"; then
        step="$(failed_step "${s}" "${log}")"
        case "${step}" in
            create | prepare)
                mv "${log}" ".lab/molecule/${s}.attempt1.log"
                mv -f "${log}.steps" ".lab/molecule/${s}.attempt1.log.steps" 2>/dev/null
                note="first attempt failed in lab set-up step '${step}'"
                diagnose "${s}: ${note}; log .lab/molecule/${s}.attempt1.log" ".lab/molecule/${s}.attempt1.log"
                echo "   ${note}; running it again"
                run_one "${s}" "${log}" || result=FAILED
                ;;
            *) result=FAILED ;;
        esac
    fi
    if [[ "${result}" == FAILED ]]; then
        failed+=("${s}")
        tail -n 80 "${log}"
        step="$(failed_step "${s}" "${log}")"
        diagnose "${s}: FAILED in step '${step:-unknown}'; log ${log}" "${log}"
    fi
    summary+=("$(printf '%-28s %-7s %4ss %s' "${s}" "${result}" "$(($(date +%s) - start))" "${note:+(${note})}")")
    summary+=("    $(step_times "${log}")")
done
printf '\nmolecule scenarios:\n'
printf '  %s\n' "${summary[@]}"
if ((${#diagnosis[@]} > 0)); then
    printf '\nwhat went wrong:\n'
    printf '  %s\n' "${diagnosis[@]}"
fi
if ((${#failed[@]} > 0)); then
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
