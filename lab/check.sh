#!/usr/bin/env bash
# The main job end to end on the embedded lab, as a test (`make lab-test`, part of `make test`):
#   1. make lab's steps: nodes, the lab cluster, prepare, site.yml (must succeed);
#   2. site.yml again: must change nothing (changed=0 on every host);
#   3. site.yml --check on the converged lab: must report nothing to change;
# then the lab is removed. Exits 1 naming the run and the hosts that changed or failed; the logs
# stay in .lab/check/. LAB_NODES and LAB_INVENTORY run it on other node names (lab/lab.sh).
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

# A run must end with a recap, every host failed=0 unreachable=0 (and changed=0 with "idle").
run() { # ID NAME MODE COMMAND...
    local name="$2" mode="$3" log="${logs}/$1.log" start="${SECONDS}" bad
    shift 3
    if ! "$@" >"${log}" 2>&1; then
        tail -n 60 "${log}" >&2
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
run first "first run (make lab)" any "${LAB_ROOT}/lab.sh" up
run second "second run (changes nothing)" idle "${LAB_ROOT}/lab.sh" site
run check "check mode on the converged lab (nothing to change)" idle "${LAB_ROOT}/lab.sh" site --check
