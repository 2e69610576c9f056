#!/usr/bin/env bash
# Print the Python the controller toolchain is built with: ansible-core 2.20 and later need
# Python 3.12 or newer on the controller. Tried in order: $PYTHON (when set), python3,
# python3.12, python3.13, python3.14 on PATH, then the oldest such version pyenv has installed,
# then one uv installs (lab/uv_python.sh; GPUFABRIC_NO_PYTHON_DOWNLOAD=1 fails naming the
# requirement instead).
set -euo pipefail
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
if [[ -n "${PYTHON:-}" ]]; then
    ok "${PYTHON}" || { echo "PYTHON=${PYTHON} is not a Python 3.12 or newer (ansible-core 2.21 needs it on the controller)" >&2; exit 1; }
    command -v "${PYTHON}"
    exit 0
fi
for candidate in python3 python3.12 python3.13 python3.14; do
    if ok "${candidate}"; then
        command -v "${candidate}"
        exit 0
    fi
done
root="$(pyenv root 2>/dev/null || true)"
if [[ -n "${root}" ]]; then
    while read -r candidate; do
        if ok "${candidate}"; then
            echo "${candidate}"
            exit 0
        fi
    done < <(find "${root}/versions" -mindepth 3 -maxdepth 3 -path '*/bin/python3' 2>/dev/null | sort -V)
fi
# None here (a plain Debian 12 has 3.11): uv installs one, unless that is turned off.
if [[ "${GPUFABRIC_NO_PYTHON_DOWNLOAD:-0}" != 1 ]]; then
    exec "$(dirname "${BASH_SOURCE[0]}")/uv_python.sh"
fi
echo "no Python 3.12 or newer found (python3, python3.12-3.14, pyenv): ansible-core 2.21 needs it on the controller; install one and run make PYTHON=/path/to/python3.12" >&2
exit 1
