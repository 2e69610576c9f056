#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, hardware snapshots) and a real
# Kubernetes control plane (lab/kube.sh) in which they are Nodes, then the main job (site.yml)
# against them, then the rollout report.
# Usage: lab/lab.sh up      start what is missing, prepare the nodes, run site.yml, print the report
#        lab/lab.sh site    run site.yml again on the running lab (make site)
#        lab/lab.sh plan    run playbooks/plan.yml on the running lab: the dry run (make plan)
#        lab/lab.sh down    remove the nodes and the cluster (its state too)
# Extra ansible-playbook arguments can be given in LAB_PLAYBOOK_ARGS (e.g. "--check --diff").
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd "${REPO_ROOT}"

inventory="${LAB_INVENTORY:-inventory/lab}"
nodes=(gpu-node-01 gpu-node-02)

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
    local registrations
    "${LAB_ROOT}/nodes.sh" up "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" start >/dev/null
    mapfile -t registrations < <(node_snapshots)
    "$(lab_python)" "${LAB_ROOT}/cluster/nodes.py" --kubeconfig "$("${LAB_ROOT}/kube.sh" kubeconfig admin)" \
        --sysroots "${LAB_STATE}/sysroots" "${registrations[@]}" | sed 's/^/[lab] /' >&2
    log "Kubernetes API: $(awk -F'"' '/"server"/ {print $4; exit}' "$("${LAB_ROOT}/kube.sh" kubeconfig)") (roles run as gpufabric-rollout)"

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
# the roles apply them from LAB_CRDS_DIR. Without them the cluster objects are rendered to files
# instead of applied.
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
    "${LAB_ROOT}/kube.sh" status >/dev/null 2>&1 || die "the lab is not up: run 'make lab' first"
    fresh_tmpdir
    run_playbook "$1"
    [[ "$1" != site.yml ]] || { echo; cat "${LAB_STATE}/rollout-report.txt"; }
}

down() {
    "${LAB_ROOT}/nodes.sh" down "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" stop --purge
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    site) again site.yml ;;
    plan) again playbooks/plan.yml ;;
    *) die "usage: lab/lab.sh up | down | site | plan" ;;
esac
