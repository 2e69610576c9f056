#!/usr/bin/env bash
# The lab's Kubernetes cluster: a real control plane on 127.0.0.1 (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler built from their Go modules, kwok for the nodes).
#
# Usage: lab/kube.sh start [--seed FILE.yml ...]   start it (idempotent; builds missing binaries
#                                                  first); apply seed objects as the admin;
#                                                  print the kubeconfig path
#        lab/kube.sh stop [--purge]                stop it, no process left behind; --purge also
#                                                  removes its state (etcd data, PKI, kubeconfigs)
#        lab/kube.sh status                        running or stopped (exit 0 / 3)
#        lab/kube.sh kubeconfig [admin|operator]   print a kubeconfig path: the collection's
#                                                  least-privilege identity (default), the
#                                                  admin (lab set-up), the operator stand-in
#
# State lives in .lab/kube/ (kubeconfigs, PKI, etcd data, logs/, run/), or in $GPUFABRIC_KUBE_DIR
# so that molecule scenarios and pytest run their own instance side by side.
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
KUBE_DIR="${GPUFABRIC_KUBE_DIR:-${LAB_STATE}/kube}"

log() { printf '[kube] %s\n' "$*" >&2; }

controlplane() { "$(lab_python)" "${LAB_ROOT}/controlplane/controlplane.py" "$@" --state "${KUBE_DIR}"; }

start() {
    local seeds=() arg bin
    while (($# > 0)); do
        arg="$1"; shift
        case "${arg}" in
            --seed) (($# > 0)) || die "--seed needs a file"; [[ -f "$1" ]] || die "seed file $1 not found"
                    seeds+=(-f "$1"); shift ;;
            *) die "unknown start option ${arg}" ;;
        esac
    done
    bin="$("${LAB_ROOT}/controlplane/build.sh")"
    controlplane start --bin "${bin}"
    if ((${#seeds[@]} > 0)); then
        "${bin}/kubectl" --kubeconfig "${KUBE_DIR}/admin.kubeconfig" apply --server-side \
            --field-manager=gpufabric-lab-seed "${seeds[@]}" >/dev/null || die "applying the seed objects failed"
    fi
    printf '%s\n' "${KUBE_DIR}/kubeconfig"
}

kubeconfig() {
    case "${1:-gpufabric-rollout}" in
        gpufabric-rollout) printf '%s\n' "${KUBE_DIR}/kubeconfig" ;;
        admin | operator) printf '%s\n' "${KUBE_DIR}/$1.kubeconfig" ;;
        *) die "usage: lab/kube.sh kubeconfig [admin|operator]" ;;
    esac
}

cmd="${1:-}"
shift || true
case "${cmd}" in
    start) start "$@" ;;
    stop)
        case "${1:-}" in "" | --purge) ;; *) die "usage: lab/kube.sh stop [--purge]" ;; esac
        controlplane stop ${1:+"$1"} ;;
    status) controlplane status ;;
    kubeconfig) kubeconfig "$@" ;;
    *) die "usage: lab/kube.sh start [--seed FILE ...] | stop [--purge] | status | kubeconfig [admin|operator]" ;;
esac
