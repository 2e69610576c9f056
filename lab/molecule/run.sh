#!/usr/bin/env bash
# Run molecule scenarios one after another (all of them, or those named), each with a fresh
# TMPDIR (kubernetes.core caches API discovery there), and print a summary with durations.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}" || exit 1
if (($# > 0)) && [[ -n "$*" ]]; then
    scenarios=("$@")
else
    mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -rn1 basename | sort)
fi
((${#scenarios[@]} > 0)) || { echo "no molecule scenarios found" >&2; exit 1; }

mkdir -p .lab/molecule
failed=() summary=()
for s in "${scenarios[@]}"; do
    log=".lab/molecule/${s}.log"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/molecule-${s}.XXXXXX")"
    start=$(date +%s)
    echo "== molecule test -s ${s} (log: ${log})"
    if TMPDIR="${tmp}" molecule test -s "${s}" >"${log}" 2>&1; then
        result=passed
    else
        result=FAILED
        failed+=("${s}")
        tail -n 80 "${log}"
    fi
    rm -rf "${tmp}"
    summary+=("$(printf '%-28s %-7s %4ss' "${s}" "${result}" "$(($(date +%s) - start))")")
done
printf '\nmolecule scenarios:\n'
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
