#!/usr/bin/env bash
# Start, stop and drive the Kubernetes API test double (lab/kubedouble) on 127.0.0.1.
#
# Usage: lab/kube.sh start [--seed FILE.yml ...] [--unready]   start it (idempotent); prints the kubeconfig path
#        lab/kube.sh stop                                       stop it; no process is left behind
#        lab/kube.sh status                                     running or stopped (exit 0 / 3)
#        lab/kube.sh ready on|off                               readiness switch for workloads
#        lab/kube.sh kubeconfig                                 print the kubeconfig path
#
# State lives in .lab/kube/ (kubeconfig, pid, port, kube.log), or in $GPUFABRIC_KUBE_DIR so that
# molecule scenarios and pytest can run their own instance side by side.
set -euo pipefail

LAB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${LAB_ROOT}/.." && pwd)"
KUBE_DIR="${GPUFABRIC_KUBE_DIR:-${REPO_ROOT}/.lab/kube}"
PID_FILE="${KUBE_DIR}/pid"
PORT_FILE="${KUBE_DIR}/port"
KUBECONFIG_FILE="${KUBE_DIR}/kubeconfig"
LOG_FILE="${KUBE_DIR}/kube.log"

log() { printf '[kube] %s\n' "$*" >&2; }
die() { printf '[kube] ERROR: %s\n' "$*" >&2; exit 1; }

python_bin() {
    if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then
        printf '%s\n' "${REPO_ROOT}/.venv/bin/python"
    else
        command -v python3 || die "no python3 found"
    fi
}

# Talk HTTP through Python (curl is not guaranteed on the controller).
http() {  # http METHOD PATH [JSON_BODY]
    local port
    port="$(cat "${PORT_FILE}" 2>/dev/null)" || return 1
    "$(python_bin)" - "${port}" "$1" "$2" "${3:-}" <<'PY'
import sys, urllib.request
port, method, path, body = sys.argv[1:5]
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method,
                             data=body.encode() if body else None, headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=3) as resp:
        sys.stdout.write(resp.read().decode())
except Exception as exc:  # noqa: BLE001
    sys.stderr.write("%s\n" % exc)
    sys.exit(1)
PY
}

running_pid() {
    local pid
    [[ -f "${PID_FILE}" ]] || return 1
    pid="$(cat "${PID_FILE}")"
    [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
    kill -0 "${pid}" 2>/dev/null || return 1
    # Guard against a recycled pid: it must be our server.
    tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q -- "-m kubedouble" || return 1
    printf '%s\n' "${pid}"
}

answers() { http GET /readyz >/dev/null 2>&1; }

start() {
    local seeds=() extra=() arg
    while (($# > 0)); do
        arg="$1"; shift
        case "${arg}" in
            --seed) (($# > 0)) || die "--seed needs a file"; [[ -f "$1" ]] || die "seed file $1 not found"
                    seeds+=(--seed "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
            --unready) extra+=(--unready) ;;
            *) die "unknown start option ${arg}" ;;
        esac
    done
    if running_pid >/dev/null && answers; then
        log "already running (pid $(running_pid), $(server_url))"
        printf '%s\n' "${KUBECONFIG_FILE}"
        return 0
    fi
    mkdir -p "${KUBE_DIR}"
    rm -f "${PID_FILE}" "${PORT_FILE}"
    (
        cd "${REPO_ROOT}"
        PYTHONPATH="${LAB_ROOT}${PYTHONPATH:+:${PYTHONPATH}}" exec setsid "$(python_bin)" -m kubedouble \
            --state-dir "${KUBE_DIR}" "${seeds[@]}" "${extra[@]}" </dev/null >"${LOG_FILE}" 2>&1
    ) &
    local pid=$! i
    printf '%s\n' "${pid}" >"${PID_FILE}"
    for ((i = 0; i < 150; i++)); do
        if [[ -f "${PORT_FILE}" ]] && answers; then
            log "started (pid ${pid}, $(server_url))"
            printf '%s\n' "${KUBECONFIG_FILE}"
            return 0
        fi
        kill -0 "${pid}" 2>/dev/null || { cat "${LOG_FILE}" >&2; rm -f "${PID_FILE}"; die "the double exited"; }
        sleep 0.1
    done
    kill "${pid}" 2>/dev/null || true
    die "the double did not answer within 15 s (log: ${LOG_FILE})"
}

stop() {
    local pid i
    if ! pid="$(running_pid)"; then
        rm -f "${PID_FILE}" "${PORT_FILE}"
        log "not running"
        return 0
    fi
    kill -TERM "${pid}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "${pid}" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "${pid}" 2>/dev/null; then
        kill -KILL "${pid}" 2>/dev/null || true
        sleep 0.1
    fi
    rm -f "${PID_FILE}" "${PORT_FILE}"
    log "stopped (pid ${pid})"
}

server_url() { printf 'http://127.0.0.1:%s' "$(cat "${PORT_FILE}" 2>/dev/null)"; }

status() {
    if running_pid >/dev/null && answers; then
        printf 'running pid=%s server=%s kubeconfig=%s ready=%s\n' "$(running_pid)" "$(server_url)" \
            "${KUBECONFIG_FILE}" "$(http GET /_double/ready)"
        return 0
    fi
    printf 'stopped\n'
    return 3
}

ready() {
    local value
    case "${1:-}" in
        on) value=true ;;
        off) value=false ;;
        *) die "usage: lab/kube.sh ready on|off" ;;
    esac
    running_pid >/dev/null || die "the double is not running"
    http PUT /_double/ready "{\"ready\": ${value}}" >/dev/null || die "could not set the readiness switch"
    log "readiness switch ${1}"
}

cmd="${1:-}"
shift || true
case "${cmd}" in
    start) start "$@" ;;
    stop) stop ;;
    status) status ;;
    ready) ready "$@" ;;
    kubeconfig) printf '%s\n' "${KUBECONFIG_FILE}" ;;
    *) die "usage: lab/kube.sh start [--seed FILE ...] | stop | status | ready on|off | kubeconfig" ;;
esac
