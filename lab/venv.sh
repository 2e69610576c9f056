#!/usr/bin/env bash
# Build the project virtualenv (.venv) from requirements.txt, once per machine: the venv is
# built (pip install, compiled bytecode included) under ${LAB_CACHE}/venvs/<key>, keyed by a
# hash of requirements.txt, this script and the Python it runs on; each checkout's .venv is a
# hard-linked copy of it with its paths rewritten (seconds, no network). A machine without that
# venv builds it from PyPI (pip's own cache keeps the downloads). Each step shows its progress.
# Files in .venv are shared with the cached venv: add packages with pip (which replaces files,
# never writes into them), do not edit files under .venv in place.
# Usage: lab/venv.sh [PYTHON]     (default: the Python 3.12+ lab/python.sh finds)
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"
export LAB_STEP_TAG=venv

python="$(PYTHON="${1:-}" "${LAB_ROOT}/python.sh")"
venv="${REPO_ROOT}/.venv"
logs="${LAB_STATE}/logs"
key="$({
    cat requirements.txt "${BASH_SOURCE[0]}"
    "${python}" -c 'import os, sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform(), os.path.realpath(sys.base_prefix))'
} | sha256sum | cut -c1-16)"
cached="${LAB_CACHE}/venvs/${key}"

mkdir -p "${LAB_CACHE}/venvs"
# One builder at a time (several checkouts may start at once on a fresh machine).
exec 9>"${LAB_CACHE}/venvs/.lock"
flock 9
if [[ -f "${cached}/.complete" ]]; then
    log "toolchain for requirements.txt: ${cached} (cached)"
else
    rm -rf "${cached}"
    lab_step "creating the cached venv ${cached} with ${python} (once per machine)" "${logs}/venv-create.log" \
        "${python}" -m venv "${cached}"
    lab_step "installing requirements.txt into it from PyPI" "${logs}/venv-install.log" \
        "${cached}/bin/python" -m pip install --disable-pip-version-check --progress-bar off -r requirements.txt
    touch "${cached}/.complete"
fi
touch "${cached}/.last-used"
# Keep the three most recently used cached venvs (each about 1 GB); checkouts made from an
# older one keep working, their files are hard links.
while read -r old; do
    log "removing the older cached venv ${old}"
    rm -rf "${old}"
done < <(find "${LAB_CACHE}/venvs" -mindepth 2 -maxdepth 2 -name .last-used -printf '%T@ %h\n' | sort -rn | tail -n +4 | cut -d' ' -f2-)

lab_step "making ${venv} from the cached venv" "${logs}/venv-copy.log" venv_copy "${cached}" "${venv}"
flock -u 9
