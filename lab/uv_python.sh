#!/usr/bin/env bash
# Provide a Python 3.12 where the machine has none (a plain Debian 12 has 3.11): uv, pinned and
# sha256-checked from PyPI, installs CPython 3.12 from python-build-standalone (uv checks each
# download against the checksums it ships) under ${LAB_CACHE}/python. Prints the interpreter's path.
# lab/python.sh calls it last; GPUFABRIC_NO_PYTHON_DOWNLOAD=1 turns it off.
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
UV_VERSION=0.13.9
case "$(uname -m)" in
    x86_64) wheel="uv-${UV_VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        sha=d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19 ;;
    aarch64) wheel="uv-${UV_VERSION}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl"
        sha=5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe ;;
    *) die "no pinned uv for $(uname -m): install a Python 3.12 and run make PYTHON=/path/to/python3.12" ;;
esac
uv="${LAB_CACHE}/uv-${UV_VERSION}/uv"
if [[ ! -x "${uv}" ]]; then
    work="$(mktemp -d)"
    trap 'rm -rf "${work}"' EXIT
    url="$(curl -fsSL https://pypi.org/simple/uv/ | grep -o "https://[^\"#]*/${wheel}" | head -1)" ||
        die "cannot reach PyPI to fetch uv ${UV_VERSION}: install a Python 3.12 and run make PYTHON=/path/to/python3.12"
    curl -fsSL -o "${work}/${wheel}" "${url}"
    echo "${sha}  ${work}/${wheel}" | sha256sum -c --quiet - || die "uv ${UV_VERSION}: the wheel's sha256 is not the pinned one"
    mkdir -p "$(dirname "${uv}")"
    unzip -p "${work}/${wheel}" "uv-${UV_VERSION}.data/scripts/uv" >"${uv}.partial"
    chmod 0755 "${uv}.partial"
    mv "${uv}.partial" "${uv}"
fi
export UV_PYTHON_INSTALL_DIR="${LAB_CACHE}/python"
log "installing CPython 3.12 with uv ${UV_VERSION} into ${UV_PYTHON_INSTALL_DIR} (once per machine)"
"${uv}" python install 3.12 >&2 || die "uv could not install Python 3.12: install one and run make PYTHON=/path/to/python3.12"
"${uv}" python find --managed-python 3.12
