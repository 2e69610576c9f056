#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, sshd, hardware snapshots) and a real
# Kubernetes control plane (lab/kube.sh) in which they are Nodes, then the main job (site.yml)
# against them, then the rollout report.
# Ansible reaches the nodes over SSH as `ansible` with sudo, through the transport named by
# gpufabric_lab_connection (inventory/lab/group_vars/gpu_nodes/connection.yml) or
# GPUFABRIC_LAB_CONNECTION (mitogen | ssh | podman).
# Usage: lab/lab.sh up              start what is missing, prepare the nodes, run site.yml, print the
#                                   validation summary and the reports' paths
#        lab/lab.sh start           start what is missing and prepare the nodes (no site.yml)
#        lab/lab.sh site [ARGS...]  run site.yml again on the running lab (make site; ARGS go to
#                                   ansible-playbook, e.g. --check --diff)
#        lab/lab.sh plan [ARGS...]  run playbooks/plan.yml on the running lab: the dry run (make plan)
#        lab/lab.sh validate [ARGS...]  run playbooks/validate.yml on the running lab (the proof alone)
#        lab/lab.sh down            remove the nodes and the cluster (its state too)
# Extra ansible-playbook arguments can also be given in LAB_PLAYBOOK_ARGS (e.g. "--check --diff").
# Another shape of lab (benchmarks/bench_lab.py runs 16 nodes): LAB_NODES (node names) and
# LAB_INVENTORY (an inventory naming them; its GPU nodes become the cluster's Nodes).
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"

inventory="${LAB_INVENTORY:-inventory/lab}"
read -r -a nodes <<<"${LAB_NODES:-gpu-node-01 gpu-node-02}"

# NAME=SNAPSHOT for every GPU node of the inventory (Node name: gpufabric_k8s_node_name, else
# the inventory name), so the cluster's Nodes are described by the hardware the nodes run on.
node_snapshots() {
    ansible-inventory -i "${inventory}" --list |
        python3 -c 'import json, sys
inv = json.load(sys.stdin)
hostvars = inv.get("_meta", {}).get("hostvars", {})
for host in inv.get("gpu_nodes", {}).get("hosts", []):
    hv = hostvars.get(host, {})
    print("%s=%s" % (hv.get("gpufabric_k8s_node_name", host), hv["gpufabric_lab_snapshot"]))'
}

up() {
    start
    # shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
    again site.yml ${LAB_PLAYBOOK_ARGS:-}
}

start() {
    local begin="${SECONDS}" registrations
    "${LAB_ROOT}/nodes.sh" up "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" start >/dev/null
    mapfile -t registrations < <(node_snapshots)
    "$(lab_python)" "${LAB_ROOT}/cluster/nodes.py" --kubeconfig "$("${LAB_ROOT}/kube.sh" kubeconfig admin)" \
        --sysroots "${LAB_STATE}/sysroots" "${registrations[@]}" | sed 's/^/[lab] /' >&2
    log "Kubernetes API: $(awk -F'"' '/"server"/ {print $4; exit}' "$("${LAB_ROOT}/kube.sh" kubeconfig)") (roles run as gpufabric-rollout)"
    log "nodes and cluster up in $((SECONDS - begin)) s"
    playbook "${LAB_ROOT}/prepare.yml"
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

# A playbook against the running lab (no node start, no prepare), with the CRD arguments:
# `make site`, `make plan`; site.yml and validate.yml print the report's summary and paths after.
again() {
    local book="$1" extra=() since rc=0 crds
    shift
    "${LAB_ROOT}/kube.sh" status >/dev/null 2>&1 || die "the lab is not up: run 'make lab' first"
    # Running already: this applies the checkout's RBAC again (the roles' needs may have changed).
    "${LAB_ROOT}/kube.sh" start >/dev/null
    # The CRDs the roles apply: the upstream ones from LAB_CRDS_DIR, else the lab's permissive
    # stand-ins; the cluster objects go to the real API server either way.
    crds="$(lab_crds_dir)"
    extra=(-e "network_operator_crds_dir=${crds}" -e "gpu_operator_crds_dir=${crds}")
    since="$(mktemp "${TMPDIR:-/tmp}/gpufabric-lab-run.XXXXXX")"
    playbook "${book}" "${extra[@]}" "$@" || rc=$?
    if [[ "${book}" == site.yml || "${book}" == playbooks/validate.yml ]]; then
        "${LAB_ROOT}/report-summary.sh" "${since}"
    fi
    rm -f "${since}"
    return "${rc}"
}

down() {
    "${LAB_ROOT}/nodes.sh" down "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" stop --purge
    # The validate role's record of the last measurement: a new lab measures again.
    rm -f "${LAB_STATE}/validation-record.json"
}

# shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
case "${1:-}" in
    up) lab_connection_env; up ;;
    start) lab_connection_env; start ;;
    site) shift; lab_connection_env; again site.yml ${LAB_PLAYBOOK_ARGS:-} "$@" ;;
    plan) shift; lab_connection_env; again playbooks/plan.yml ${LAB_PLAYBOOK_ARGS:-} "$@" ;;
    validate) shift; lab_connection_env; again playbooks/validate.yml ${LAB_PLAYBOOK_ARGS:-} "$@" ;;
    down) down ;;
    *) die "usage: lab/lab.sh up | start | site [ANSIBLE-PLAYBOOK ARGS...] | plan [ARGS...] | validate [ARGS...] | down" ;;
esac
