#!/usr/bin/env bash
# The embedded lab: two GPU-like nodes (podman, systemd, hardware snapshots) and a real
# Kubernetes control plane (lab/kube.sh) in which they are Nodes, then the main job (site.yml)
# against them, then the rollout report.
# Usage: lab/lab.sh up      start what is missing, prepare the nodes, run site.yml, print the report
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

    # The upstream CRD schemas (NicClusterPolicy, IPPool, NADs, ...) are not part of this
    # repository; the network_operator role applies them from LAB_CRDS_DIR. Without them the
    # cluster objects are rendered to files instead of applied.
    local crds="${LAB_CRDS_DIR:-${REPO_ROOT}/../shared/crds}" extra=()
    if [[ -d "${crds}" ]]; then
        extra+=(-e "network_operator_crds_dir=$(cd "${crds}" && pwd)")
    else
        log "no CRD schemas in ${crds} (set LAB_CRDS_DIR): cluster objects are rendered to .lab/rendered, not applied"
        extra+=(-e gpufabric_k8s_mode=render)
    fi

    # kubernetes.core caches API discovery under TMPDIR, keyed by server URL: use a fresh one.
    TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-lab.XXXXXX")"
    export TMPDIR
    trap 'rm -rf "${TMPDIR}"' EXIT
    ansible-playbook -i "${inventory}" "${LAB_ROOT}/prepare.yml"
    # shellcheck disable=SC2086  # LAB_PLAYBOOK_ARGS is a list of arguments
    ansible-playbook -i "${inventory}" site.yml "${extra[@]}" ${LAB_PLAYBOOK_ARGS:-}
    echo
    cat "${LAB_STATE}/rollout-report.txt"
}

down() {
    "${LAB_ROOT}/nodes.sh" down "${nodes[@]}"
    "${LAB_ROOT}/kube.sh" stop --purge
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) die "usage: lab/lab.sh up | down" ;;
esac
