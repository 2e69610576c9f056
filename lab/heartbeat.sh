#!/usr/bin/env bash
# Run COMMAND with its output as it is, and never let it stay silent for 30 s: whenever it has
# printed nothing on stderr for 30 s, print "[TAG] ... still running after N s" there. For long
# quiet steps such as the control plane's Go builds. stdout passes through untouched (callers
# capture it), the exit status is COMMAND's.
# Usage: [HEARTBEAT_EVERY=seconds] lab/heartbeat.sh TAG COMMAND [ARG...]   (default 30 s)
set -uo pipefail
tag="$1"
shift
stamp="$(mktemp)"
trap 'rm -f "${stamp}"' EXIT
start=${SECONDS}
every="${HEARTBEAT_EVERY:-30}"
(
    while sleep 1; do
        [[ -e "${stamp}" ]] || exit 0
        if (($(date +%s) - $(stat -c %Y "${stamp}") >= every)); then
            printf '[%s] ... still running after %s s\n' "${tag}" "$((SECONDS - start))" >&2
            touch "${stamp}"
        fi
    done
) &
ticker=$!
"$@" 2> >(while IFS= read -r line; do
    printf '%s\n' "${line}" >&2
    touch "${stamp}"
done)
rc=$?
kill "${ticker}" 2>/dev/null
wait "${ticker}" 2>/dev/null
exit "${rc}"
