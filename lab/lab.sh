#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, hardware snapshots) and the Kubernetes
# API test double, then the main job (site.yml) against them, then the rollout report.
# Usage: lab/lab.sh up      start what is missing, prepare the nodes, run site.yml, print the report
#        lab/lab.sh down    remove the nodes and stop the API double
# Extra ansible-playbook arguments can be given in LAB_PLAYBOOK_ARGS (e.g. "--check --diff").
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"

inventory="${LAB_INVENTORY:-inventory/lab}"
nodes=(gpu-node-01 gpu-node-02)

up() {
    "${LAB_ROOT}/nodes.sh" up "${nodes[@]}"
    if [[ -x "${LAB_ROOT}/kube.sh" ]]; then
        "${LAB_ROOT}/kube.sh" start --seed "${LAB_ROOT}/cluster/nodes.yml" >/dev/null
        log "Kubernetes API test double: $(cat "${LAB_STATE}/kube/kubeconfig" | awk '/server:/ {print $2; exit}')"
    fi
    # kubernetes.core caches API discovery under TMPDIR, keyed by server URL: use a fresh one.
    TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-lab.XXXXXX")"
    export TMPDIR
    trap 'rm -rf "${TMPDIR}"' EXIT
    ansible-playbook -i "${inventory}" "${LAB_ROOT}/prepare.yml"
    # shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
    ansible-playbook -i "${inventory}" site.yml ${LAB_PLAYBOOK_ARGS:-}
    echo
    cat "${LAB_STATE}/rollout-report.txt"
}

down() {
    "${LAB_ROOT}/nodes.sh" down "${nodes[@]}"
    if [[ -x "${LAB_ROOT}/kube.sh" ]]; then "${LAB_ROOT}/kube.sh" stop || true; fi
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) die "usage: lab/lab.sh up | down" ;;
esac
