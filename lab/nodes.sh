#!/usr/bin/env bash
# Start, list and remove lab nodes: podman containers of the lab image running systemd,
# named like GPU nodes. Their hardware (a snapshot tree) and hardware-tool simulators are laid
# down by lab/prepare.yml, which `make lab` and molecule's prepare step run.
#
# Usage: lab/nodes.sh up NAME [NAME...]    start nodes (idempotent)
#        lab/nodes.sh down [NAME...]       remove the named nodes, or all lab nodes
#        lab/nodes.sh list                 names of running lab nodes
#        lab/nodes.sh restart NAME         restart a node (a reboot, as far as the lab goes)
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

lab_containers_conf

valid_name() { [[ "$1" =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "invalid node name '$1' (DNS label: a-z, 0-9, -)"; }

up() {
    (($# > 0)) || die "up needs at least one node name"
    local ref name
    ref="$("${LAB_ROOT}/image/build.sh")"
    for name in "$@"; do
        valid_name "${name}"
        if podman container exists "${name}"; then
            [[ "$(podman inspect -f '{{.State.Running}}' "${name}")" == true ]] || podman start "${name}" >/dev/null
            log "node ${name} is up"
            continue
        fi
        podman run -d --name "${name}" --hostname "${name}" --label "${LAB_LABEL}" \
            --privileged --systemd=always --network host \
            --tmpfs /run --tmpfs /tmp "${ref}" /sbin/init >/dev/null
        log "started node ${name} (${ref})"
    done
    for name in "$@"; do wait_running "${name}"; done
}

# systemd is ready enough for Ansible once it reports running or degraded.
wait_running() {
    local name="$1" state i
    for ((i = 0; i < 60; i++)); do
        state="$(podman exec "${name}" systemctl is-system-running 2>/dev/null || true)"
        case "${state}" in running | degraded) return 0 ;; esac
        sleep 0.5
    done
    die "node ${name} did not finish booting (systemd state: ${state:-unknown})"
}

down() {
    local names=("$@")
    if ((${#names[@]} == 0)); then
        mapfile -t names < <(podman ps -a --filter "label=${LAB_LABEL}" --format '{{.Names}}')
    fi
    ((${#names[@]} == 0)) && { log "no lab nodes"; return 0; }
    podman rm -f -t 2 "${names[@]}" >/dev/null
    log "removed ${names[*]}"
}

case "${1:-}" in
    up) shift; up "$@" ;;
    down) shift; down "$@" ;;
    list) podman ps --filter "label=${LAB_LABEL}" --format '{{.Names}}' ;;
    restart) shift; (($# == 1)) || die "restart takes one node name"; podman restart -t 5 "$1" >/dev/null; wait_running "$1" ;;
    *) die "usage: lab/nodes.sh up NAME... | down [NAME...] | list | restart NAME" ;;
esac
