#!/usr/bin/env bash
# Print the directory of the upstream CRDs the tests validate against: LAB_CRDS_DIR when set, else
# the shared CRD schemas beside the checkout when that folder exists, else nothing (the lab then
# installs its permissive stand-ins, and the tests that need the schemas skip, or fail under
# CI=true). Read by the Makefile's test targets only; `make lab` takes LAB_CRDS_DIR alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${LAB_CRDS_DIR:-}" ]]; then
    printf '%s\n' "${LAB_CRDS_DIR}"
elif [[ -d "${repo}/../shared/crds" ]]; then
    (cd "${repo}/../shared/crds" && pwd)
fi
