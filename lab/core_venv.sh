#!/usr/bin/env bash
# Build a venv for one ansible-core release of the support matrix: .lab/cores/<version>, the
# project venv (.venv, make venv) with only ansible-core replaced. The collections, the test tools
# and the Python stay the same, so a matrix run differs from the main one in the core alone. Built
# once per machine under ${LAB_CACHE}/venvs (keyed by the main venv's and this script's contents),
# then hard-link copied like the main venv.
# Usage: lab/core_venv.sh VERSION     (an ansible-core release, e.g. 2.19.14)
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"
export LAB_STEP_TAG=core-venv

version="${1:-}"
[[ "${version}" =~ ^2\.[0-9]+\.[0-9]+$ ]] || die "usage: lab/core_venv.sh VERSION (an ansible-core release such as 2.19.14), got '${version}'"
[[ -x .venv/bin/python ]] || die "run 'make venv' first"
main_venv="$(realpath .venv)"
logs="${LAB_STATE}/logs"
key="$({
    cat requirements.txt "${BASH_SOURCE[0]}" .venv/pyvenv.cfg
    echo "${version}"
} | sha256sum | cut -c1-16)"
cached="${LAB_CACHE}/venvs/core-${version}-${key}"
dest="${LAB_STATE}/cores/${version}"

mkdir -p "${LAB_CACHE}/venvs" "${LAB_STATE}/cores"
exec 9>"${LAB_CACHE}/venvs/.lock-core-${version}"
flock 9
if [[ -f "${cached}/.complete" ]]; then
    log "ansible-core ${version}: ${cached} (cached)"
else
    rm -rf "${cached}"
    lab_step "copying the project venv for ansible-core ${version}" "${logs}/core-${version}-copy.log" \
        venv_copy "${main_venv}" "${cached}"
    # --no-deps: the `ansible` package (its collections) pins the newest core; the matrix replaces
    # the core alone under the same collections.
    lab_step "installing ansible-core ${version} into it" "${logs}/core-${version}-install.log" \
        "${cached}/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-deps \
        "ansible-core==${version}"
    touch "${cached}/.complete"
fi
# The checkout's copy is made once per cached venv and then left alone: make test's two lanes both
# call this (the oldest core's main job in one, the matrix in the other), and remaking the copy
# under a run that uses it made that run's imports fail half-way. The lock above serialises them.
if [[ -f "${dest}/.source" && "$(cat "${dest}/.source")" == "${cached}" ]]; then
    log "ansible-core ${version}: ${dest} is up to date"
else
    lab_step "making ${dest}" "${logs}/core-${version}-dest.log" venv_copy "${cached}" "${dest}"
    printf '%s\n' "${cached}" >"${dest}/.source"
fi
