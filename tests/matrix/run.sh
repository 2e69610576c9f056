#!/usr/bin/env bash
# The support matrix: ansible-test sanity and the unit tests on every ansible-core release of
# tests/matrix/cores.txt, each in its own venv (lab/core_venv.sh, cached per machine), the releases
# side by side where the machine has the CPUs (one per two cores). Full logs under .lab/logs/matrix/;
# one line per release and step, and the tail of each failing log.
# Usage: tests/matrix/run.sh [VERSION ...]     (default: every release of cores.txt, then the node Python)
# MATRIX_STEPS=sanity runs sanity and the node Python's checks only, MATRIX_STEPS=units the unit
# tests only (make test runs the sanity step; make matrix runs both); the default runs both.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"
steps="${MATRIX_STEPS:-sanity units}"
[[ "${steps}" =~ ^(sanity|units|sanity units)$ ]] || { echo "MATRIX_STEPS: 'sanity', 'units' or 'sanity units', got '${steps}'" >&2; exit 2; }
mapfile -t cores < <(if (($#)); then printf '%s\n' "$@"; else grep -vE '^\s*(#|$)' tests/matrix/cores.txt; fi)
logs="${repo}/.lab/logs/matrix"
mkdir -p "${logs}"

one() {
    local version="$1" venv="${repo}/.lab/cores/$1" start rc=0
    lab/core_venv.sh "${version}" >"${logs}/${version}-venv.log" 2>&1 || {
        echo "[matrix] ansible-core ${version}: venv FAILED (${logs}/${version}-venv.log)"
        return 1
    }
    start=${SECONDS}
    if [[ "${steps}" != *sanity* ]]; then
        :
    elif SANITY_VENV="${venv}" tests/sanity/run.sh >"${logs}/${version}-sanity.log" 2>&1; then
        echo "[matrix] ansible-core ${version}: sanity passed in $((SECONDS - start)) s"
    else
        echo "[matrix] ansible-core ${version}: sanity FAILED in $((SECONDS - start)) s (${logs}/${version}-sanity.log):"
        grep -E '^ERROR' "${logs}/${version}-sanity.log" | head -20 | sed 's/^/    /'
        rc=1
    fi
    start=${SECONDS}
    if [[ "${steps}" != *units* ]]; then
        :
    elif PATH="${venv}/bin:${PATH}" "${venv}/bin/python" -m pytest -q -p no:cacheprovider >"${logs}/${version}-unit.log" 2>&1; then
        echo "[matrix] ansible-core ${version}: units $(tail -1 "${logs}/${version}-unit.log" | tr -d '=' | xargs) "
    else
        echo "[matrix] ansible-core ${version}: units FAILED in $((SECONDS - start)) s (${logs}/${version}-unit.log):"
        grep -E '^(FAILED|ERROR)' "${logs}/${version}-unit.log" | head -20 | sed 's/^/    /'
        tail -1 "${logs}/${version}-unit.log" | sed 's/^/    /'
        rc=1
    fi
    return "${rc}"
}

# ansible-test's compile and import checks of the modules on the oldest node Python
# (tests/matrix/node-python.txt), found on PATH or among pyenv's versions.
node_python() {
    local version found
    version="$(grep -vE '^\s*(#|$)' tests/matrix/node-python.txt | head -1)"
    found="$(command -v "python${version}" 2>/dev/null)" && "${found}" -c '' 2>/dev/null ||
        found="$(find "${HOME}/.pyenv/versions" -maxdepth 3 -path "*/${version}.*/bin/python${version}" 2>/dev/null | sort -V | tail -1)"
    [[ -n "${found}" ]] || { echo "[matrix] node Python ${version}: not found (PATH or pyenv) FAILED"; return 1; }
    local start=${SECONDS} log="${logs}/node-python-${version}.log"
    if PATH="$(dirname "${found}"):${PATH}" tests/sanity/run.sh --test compile --test import --python "${version}" >"${log}" 2>&1; then
        echo "[matrix] node Python ${version}: compile and import passed in $((SECONDS - start)) s"
    else
        echo "[matrix] node Python ${version}: compile and import FAILED (${log}):"
        grep -E '^(ERROR|FATAL)' "${log}" | head -20 | sed 's/^/    /'
        return 1
    fi
}

width=$(($(nproc) / 2))
((width >= 1)) || width=1
echo "[matrix] ansible-core ${cores[*]}: ${steps/ / and }, ${width} at a time"
pids=() failed=0
for version in "${cores[@]}"; do
    one "${version}" &
    pids+=("$!")
    if ((${#pids[@]} >= width)); then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do wait "${pid}" || failed=1; done
(($#)) || [[ "${steps}" != *sanity* ]] || node_python || failed=1
((failed == 0)) || { echo "[matrix] FAILED (logs: ${logs})"; exit 1; }
echo "[matrix] passed: ansible-core ${cores[*]} (${steps/ / and })"
