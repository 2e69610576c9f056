#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, hardware snapshots) and the Kubernetes
# API test double, then the main job (site.yml) against them, then the rollout report.
# Usage: lab/lab.sh up      start what is missing, prepare the nodes, run site.yml, print the report
#        lab/lab.sh site    run site.yml again on the running lab (make site)
#        lab/lab.sh plan    run playbooks/plan.yml on the running lab: the dry run (make plan)
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
    "${LAB_ROOT}/kube.sh" start --seed "${LAB_ROOT}/cluster/nodes.yml" >/dev/null
    log "Kubernetes API test double: $(awk '/server:/ {print $2; exit}' "${LAB_STATE}/kube/kubeconfig")"
    stop_operator && start_operator

    fresh_tmpdir
    ansible-playbook -i "${inventory}" "${LAB_ROOT}/prepare.yml"
    run_playbook site.yml
    echo
    cat "${LAB_STATE}/rollout-report.txt"
}

# kubernetes.core caches API discovery under TMPDIR, keyed by server URL: use a fresh one.
fresh_tmpdir() {
    TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-lab.XXXXXX")"
    export TMPDIR
    trap 'rm -rf "${TMPDIR}"' EXIT
}

# The upstream CRD schemas (NicClusterPolicy, IPPool, NADs, ...) are not part of this repository;
# the lab registers them from LAB_CRDS_DIR. Without them the cluster objects are rendered to
# files instead of applied.
crd_args() {
    local crds="${LAB_CRDS_DIR:-${REPO_ROOT}/../shared/crds}"
    if [[ -d "${crds}" ]]; then
        printf '%s\n' -e "network_operator_crds_dir=$(cd "${crds}" && pwd)" -e "gpu_operator_crds_dir=$(cd "${crds}" && pwd)"
    else
        log "no CRD schemas in ${crds} (set LAB_CRDS_DIR): cluster objects are rendered to .lab/rendered, not applied"
        printf '%s\n' -e gpufabric_k8s_mode=render
    fi
}

run_playbook() { # PLAYBOOK: run it against the lab with the CRD arguments and LAB_PLAYBOOK_ARGS
    local extra=()
    mapfile -t extra < <(crd_args)
    # shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
    ansible-playbook -i "${inventory}" "$1" "${extra[@]}" ${LAB_PLAYBOOK_ARGS:-}
}

# Rerun a playbook against the running lab (no node start, no prepare): `make site`, `make plan`.
again() {
    [[ -f "${LAB_STATE}/kube/kubeconfig" ]] || die "the lab is not up: run 'make lab' first"
    fresh_tmpdir
    run_playbook "$1"
    [[ "$1" != site.yml ]] || { echo; cat "${LAB_STATE}/rollout-report.txt"; }
}

# Play the Network Operator: report NicClusterPolicy/NicNodePolicy ready, as the real operator
# does once its pods run (nothing runs them in the lab).
start_operator() {
    local pidfile="${LAB_STATE}/operator.pid"
    echo ready >"${LAB_STATE}/operator-mode"
    setsid nohup python "${LAB_ROOT}/cluster/play_operator.py" "${LAB_STATE}/kube/kubeconfig" \
        "${LAB_STATE}/operator-mode" >"${LAB_STATE}/operator.log" 2>&1 </dev/null &
    echo $! >"${pidfile}"
}

stop_operator() {
    local pidfile="${LAB_STATE}/operator.pid"
    if [[ -f "${pidfile}" ]]; then kill "$(cat "${pidfile}")" 2>/dev/null || true; rm -f "${pidfile}"; fi
}

down() {
    "${LAB_ROOT}/nodes.sh" down "${nodes[@]}"
    stop_operator
    "${LAB_ROOT}/kube.sh" stop || true
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    site) again site.yml ;;
    plan) again playbooks/plan.yml ;;
    *) die "usage: lab/lab.sh up | down | site | plan" ;;
esac
