#!/usr/bin/env bash
# Start, list and remove lab nodes: podman containers of the lab image running systemd and
# sshd, named like GPU nodes. Ansible reaches them as it reaches servers: over SSH as the
# unprivileged user `ansible` with the checkout's lab key, becoming root with sudo (see
# inventory/lab and docs/lab.md, "How the lab connects to its nodes"). Their hardware (a
# snapshot tree) and hardware-tool simulators are laid down by lab/prepare.yml, which
# `make lab` and molecule's prepare step run.
#
# Nodes share the controller's network (--network host), so each node's sshd listens on its own
# port on 127.0.0.1, chosen when the node is created and kept in the container label
# io.gpufabric.lab.ssh-port (a restart keeps it). .lab/ssh/config maps node names to those
# ports (ssh -F .lab/ssh/config NODE); it is rewritten whenever nodes come or go.
#
# Usage: lab/nodes.sh up NAME [NAME...]    start nodes (idempotent); ready when SSH + sudo answer
#        lab/nodes.sh down [NAME...]       remove the named nodes, or all lab nodes
#        lab/nodes.sh list                 names of running lab nodes
#        lab/nodes.sh restart NAME         restart a node (a reboot, as far as the lab goes)
#        lab/nodes.sh ports [NAME...]      "NAME PORT" of each lab node (or of the named ones)
#        lab/nodes.sh ssh-config           (re)write .lab/ssh/config and print its path
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

lab_containers_conf

PORT_LABEL="io.gpufabric.lab.ssh-port"
# First port tried for a new node's sshd (127.0.0.1 only); the next free one is taken.
SSH_PORT_BASE="${LAB_SSH_PORT_BASE:-22200}"

valid_name() { [[ "$1" =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "invalid node name '$1' (DNS label: a-z, 0-9, -)"; }

up() {
    (($# > 0)) || die "up needs at least one node name"
    local ref name
    ref="$("${LAB_ROOT}/image/build.sh")"
    lab_ssh_key
    for name in "$@"; do
        valid_name "${name}"
        if podman container exists "${name}"; then
            if [[ "$(podman inspect -f '{{.ImageName}}' "${name}")" != "${ref}" ||
                -z "$(node_port "${name}")" ]]; then
                log "node ${name} was made from another image; replacing it"
                podman rm -f -t 2 "${name}" >/dev/null
            elif ! running "${name}" && ! { podman start "${name}" >/dev/null 2>&1 && sleep 1 && running "${name}"; }; then
                # A container left by an earlier boot of this machine can fail to start or exit at once.
                log "node ${name} does not stay up; replacing it"
                podman rm -f -t 2 "${name}" >/dev/null
            else
                log "node ${name} is up"
                continue
            fi
        fi
        create "${name}" "${ref}"
    done
    ssh_config >/dev/null
    for name in "$@"; do
        authorize "${name}"
    done
    for name in "$@"; do wait_ready "${name}"; done
}

create() {
    local name="$1" ref="$2" port conf
    port="$(free_port)"
    podman create --name "${name}" --hostname "${name}" --label "${LAB_LABEL}" \
        --label "${PORT_LABEL}=${port}" --privileged --systemd=always --network host --add-host "${name}:127.0.1.1" \
        --tmpfs /run --tmpfs /tmp "${ref}" /sbin/init >/dev/null
    conf="$(mktemp "${TMPDIR:-/tmp}/gpufabric-lab-sshd.XXXXXX")"
    printf '# Written by lab/nodes.sh: this node listens on its own port (--network host).\nListenAddress 127.0.0.1:%s\n' \
        "${port}" >"${conf}"
    chmod 0644 "${conf}"
    podman cp "${conf}" "${name}:/etc/ssh/sshd_config.d/20-gpufabric-lab-listen.conf"
    rm -f "${conf}"
    podman start "${name}" >/dev/null
    log "started node ${name} (${ref}, sshd on 127.0.0.1:${port})"
}

running() { [[ "$(podman inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" == true ]]; }

node_port() { podman inspect -f "{{index .Config.Labels \"${PORT_LABEL}\"}}" "$1" 2>/dev/null | sed 's/<no value>//'; }

# The lowest port from SSH_PORT_BASE that no lab node has and nothing listens on.
free_port() {
    local taken port
    taken=" $(podman ps -a --filter "label=${LAB_LABEL}" --format "{{index .Labels \"${PORT_LABEL}\"}}" | tr '\n' ' ') "
    for ((port = SSH_PORT_BASE; port < SSH_PORT_BASE + 1000; port++)); do
        [[ "${taken}" == *" ${port} "* ]] && continue
        [[ -n "$(ss -Htln "sport = :${port}" 2>/dev/null)" ]] && continue
        echo "${port}"
        return 0
    done
    die "no free port in ${SSH_PORT_BASE}-$((SSH_PORT_BASE + 999)) for a node's sshd (set LAB_SSH_PORT_BASE)"
}

# Let the checkout's lab key in (several checkouts may share a node: keys are added, not replaced).
authorize() {
    podman exec "$1" sh -c 'umask 077; f=/home/ansible/.ssh/authorized_keys; touch "$f"
        grep -qxF "$2" "$f" || printf "%s\n" "$2" >>"$f"; chown ansible:ansible "$f"' sh "$1" "$(cat "${LAB_SSH_KEY}.pub")"
}

# Ready for Ansible: systemd has finished booting (running or degraded), and the Ansible user
# logs in over SSH and becomes root with sudo.
wait_ready() {
    local name="$1" state="" i
    for ((i = 0; i < 120; i++)); do
        state="$(podman exec "${name}" systemctl is-system-running 2>/dev/null || true)"
        case "${state}" in running | degraded) break ;; esac
        sleep 0.25
    done
    case "${state}" in running | degraded) ;; *) die "node ${name} did not finish booting (systemd state: ${state:-unknown})" ;; esac
    for ((i = 0; i < 60; i++)); do
        if ssh -F "${LAB_STATE}/ssh/config" -o BatchMode=yes -o ConnectTimeout=2 -o ControlMaster=no \
            -o ControlPath=none "${name}" sudo -n true 2>/dev/null; then
            return 0
        fi
        sleep 0.25
    done
    ssh -F "${LAB_STATE}/ssh/config" -o BatchMode=yes -o ConnectTimeout=2 -o ControlMaster=no \
        -o ControlPath=none "${name}" sudo -n true || true
    die "node ${name}: no SSH login as ansible with sudo on 127.0.0.1:$(node_port "${name}")"
}

# .lab/ssh/config: one Host entry per lab node on this machine (also nodes another checkout
# started: the key is added to them when they are brought up from here).
ssh_config() {
    local conf="${LAB_STATE}/ssh/config" name port
    lab_ssh_key
    mkdir -p "${HOME}/.ansible/cp"
    {
        echo "# Generated by lab/nodes.sh from the running lab nodes; do not edit."
        echo "# Use: ssh -F ${conf} NODE"
        while read -r name port; do
            [[ -n "${port}" && "${port}" != "<no value>" ]] || continue
            printf 'Host %s\n    HostName 127.0.0.1\n    Port %s\n' "${name}" "${port}"
        done < <(podman ps -a --filter "label=${LAB_LABEL}" --format "{{.Names}} {{index .Labels \"${PORT_LABEL}\"}}" | sort)
        cat <<CONF
Host *
    User ansible
    IdentityFile ${LAB_SSH_KEY}
    IdentitiesOnly yes
    # Nodes are recreated with new host keys under the same names: do not pin them.
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    ControlMaster auto
    ControlPersist 60s
    ControlPath ~/.ansible/cp/lab-%C
CONF
    } >"${conf}.tmp.$$"
    mv "${conf}.tmp.$$" "${conf}"
    echo "${conf}"
}

ports() {
    local name
    if (($# == 0)); then
        podman ps -a --filter "label=${LAB_LABEL}" --format "{{.Names}} {{index .Labels \"${PORT_LABEL}\"}}" | sort
        return 0
    fi
    for name in "$@"; do
        podman container exists "${name}" || die "no lab node ${name}"
        printf '%s %s\n' "${name}" "$(node_port "${name}")"
    done
}

down() {
    local names=("$@")
    if ((${#names[@]} == 0)); then
        mapfile -t names < <(podman ps -a --filter "label=${LAB_LABEL}" --format '{{.Names}}')
    fi
    ((${#names[@]} == 0)) && { log "no lab nodes"; return 0; }
    # podman can lose the race between a node's own stop and the SIGKILL after the timeout ("cannot
    # remove container ... container state improper: stopped") and leave that node stopped, not
    # removed; a second rm removes it (--ignore: the others are gone already).
    if ! podman rm -f -t 2 "${names[@]}" >/dev/null; then
        log "podman rm failed; removing what is left once more"
        podman rm -f -t 2 --ignore "${names[@]}" >/dev/null
    fi
    ssh_config >/dev/null
    log "removed ${names[*]}"
}

restart() {
    podman restart -t 5 "$1" >/dev/null
    wait_ready "$1"
}

# Node names and sshd ports are shared by every lab user on this machine (make test runs a lab
# lane and a cluster lane side by side): creating, removing and the ssh config are done one
# command at a time, so two commands cannot pick the same free port or interleave the config.
# The command runs again under `flock -o`: flock holds the lock and the command does not inherit
# its descriptor, so the nodes' conmon processes (podman run daemonizes them from here) do not
# keep the lock for as long as the nodes live.
case "${1:-}" in
    up | down | ssh-config)
        if [[ -z "${LAB_NODES_LOCKED:-}" ]]; then
            LAB_NODES_LOCKED=1 exec flock -o "${LAB_NODES_LOCK:-/tmp/gpufabric-lab-nodes.lock}" "${BASH_SOURCE[0]}" "$@"
        fi
        ;;
esac

case "${1:-}" in
    up) shift; up "$@" ;;
    down) shift; down "$@" ;;
    list) podman ps --filter "label=${LAB_LABEL}" --format '{{.Names}}' ;;
    restart) shift; (($# == 1)) || die "restart takes one node name"; restart "$1" ;;
    ports) shift; ports "$@" ;;
    ssh-config) ssh_config ;;
    *) die "usage: lab/nodes.sh up NAME... | down [NAME...] | list | restart NAME | ports [NAME...] | ssh-config" ;;
esac
