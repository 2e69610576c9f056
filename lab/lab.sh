#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, sshd, hardware snapshots) and the
# Kubernetes API test double, then the main job (site.yml) against them, then the rollout report.
# Ansible reaches the nodes over SSH as `ansible` with sudo, through the transport named by
# gpufabric_lab_connection (inventory/lab/group_vars/gpu_nodes/connection.yml) or
# GPUFABRIC_LAB_CONNECTION (mitogen | ssh | podman).
# Usage: lab/lab.sh up              start what is missing, prepare the nodes, run site.yml, print the report
#        lab/lab.sh start           start what is missing and prepare the nodes (no site.yml)
#        lab/lab.sh site [ARGS...]  run site.yml again on the running lab (ARGS go to ansible-playbook,
#                                   e.g. --check --diff)
#        lab/lab.sh down            remove the nodes and stop the API double
# Extra ansible-playbook arguments for `up` can be given in LAB_PLAYBOOK_ARGS (e.g. "--check --diff").
# Another shape of lab (benchmarks/bench_lab.py runs 16 nodes): LAB_NODES (node names),
# LAB_INVENTORY (an inventory naming them) and LAB_KUBE_SEED (Node objects for the API double).
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"

inventory="${LAB_INVENTORY:-inventory/lab}"
read -r -a nodes <<<"${LAB_NODES:-gpu-node-01 gpu-node-02}"

up() {
    start
    # shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
    site ${LAB_PLAYBOOK_ARGS:-}
    echo
    cat "${LAB_STATE}/rollout-report.txt"
}

start() {
    local begin="${SECONDS}"
    "${LAB_ROOT}/nodes.sh" up "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" start --seed "${LAB_KUBE_SEED:-${LAB_ROOT}/cluster/nodes.yml}" >/dev/null
    log "Kubernetes API test double: $(awk '/server:/ {print $2; exit}' "${LAB_STATE}/kube/kubeconfig")"
    stop_operator && start_operator
    log "nodes and API double up in $((SECONDS - begin)) s"
    playbook "${LAB_ROOT}/prepare.yml"
}

# site.yml against the running lab, with the cluster-side extra vars.
site() {
    # The upstream CRD schemas (NicClusterPolicy, IPPool, NADs, ...) are not part of this
    # repository; the lab registers them from LAB_CRDS_DIR. Without them the cluster objects are
    # rendered to files instead of applied.
    local crds="${LAB_CRDS_DIR:-${REPO_ROOT}/../shared/crds}" extra=()
    if [[ -d "${crds}" ]]; then
        extra+=(-e "network_operator_crds_dir=$(cd "${crds}" && pwd)")
    else
        log "no CRD schemas in ${crds} (set LAB_CRDS_DIR): cluster objects are rendered to .lab/rendered, not applied"
        extra+=(-e gpufabric_k8s_mode=render)
    fi
    playbook site.yml "${extra[@]}" "$@"
}

# ansible-playbook against the lab inventory over the lab's transport, timed.
playbook() {
    local start="${SECONDS}" rc=0 tmp
    # kubernetes.core caches API discovery under TMPDIR, keyed by server URL: use a fresh one.
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-lab.XXXXXX")"
    TMPDIR="${tmp}" ansible-playbook -i "${inventory}" -e "gpufabric_lab_connection=${GPUFABRIC_LAB_CONNECTION}" "$@" || rc=$?
    rm -rf "${tmp}"
    log "$(basename "$1") over ${GPUFABRIC_LAB_CONNECTION}: $((SECONDS - start)) s (exit ${rc})"
    return "${rc}"
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
    up) lab_connection_env; up ;;
    start) lab_connection_env; start ;;
    site) shift; lab_connection_env; site "$@" ;;
    down) down ;;
    *) die "usage: lab/lab.sh up | start | site [ANSIBLE-PLAYBOOK ARGS...] | down" ;;
esac
