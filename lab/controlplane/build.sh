#!/usr/bin/env bash
# Build the lab's control plane from Go modules, once per machine.
#
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl   lab/controlplane/kubernetes/go.mod
#   kwok                                                                     lab/controlplane/kwok/go.mod
#   crane (an OCI registry for the charts pulled by digest)                  lab/controlplane/registry/go.mod
#
# The binaries go to ${LAB_CACHE}/controlplane/<key>/ (outside the checkout, see lab/common.sh),
# where <key> hashes both modules' go.mod and go.sum, the Go sources and this script, and
# `go version`: a checkout or CI run on the same machine reuses them, a fresh machine or a changed
# pin builds them. Only missing binaries are built; each step prints one line with its time, and
# the times are kept in <dir>/build-times.tsv (`make bench` prints them).
#
# Usage: lab/controlplane/build.sh           build what is missing; print the binary directory
#        lab/controlplane/build.sh --dir     print the binary directory, build nothing
#        lab/controlplane/build.sh --check   exit 0 when every binary is there, 1 otherwise
# A missing or too old Go toolchain, a failed download or a failed build stops with a message
# naming the step; nothing falls back to other binaries.
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/common.sh"

SRC="${LAB_ROOT}/controlplane"
GO_MIN="1.26"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok crane)

step() { printf '[controlplane] %s\n' "$*" >&2; }
fail() { printf '[controlplane] ERROR in step %s: %s\n' "$1" "$2" >&2; exit 1; }

# Module directory and package of each component.
module_of() {
    case "$1" in
        kwok) printf '%s\n' "${SRC}/kwok" ;;
        crane) printf '%s\n' "${SRC}/registry" ;;
        *) printf '%s\n' "${SRC}/kubernetes" ;;
    esac
}
package_of() {
    case "$1" in
        etcd) printf './etcd\n' ;;
        kwok) printf 'sigs.k8s.io/kwok/cmd/kwok\n' ;;
        crane) printf 'github.com/google/go-containerregistry/cmd/crane\n' ;;
        *) printf 'k8s.io/kubernetes/cmd/%s\n' "$1" ;;
    esac
}

# The release each module pins, read from its go.mod (the one place the versions are written).
pinned() { awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$1/go.mod"; }

toolchain() {
    command -v go >/dev/null 2>&1 ||
        fail toolchain "no 'go' on PATH: install Go ${GO_MIN} or newer (https://go.dev/dl/) and put it on PATH"
    local have
    have="$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null)" || fail toolchain "'go env GOVERSION' failed"
    have="${have#go}"
    if ! printf '%s\n%s\n' "${GO_MIN}" "${have}" | sort -V -C; then
        fail toolchain "Go ${have} is too old: the Kubernetes modules need Go ${GO_MIN} or newer"
    fi
    GO_VERSION="$(GOTOOLCHAIN=local go version)"
}

cache_dir() {
    local key
    key="$(
        {
            for f in kubernetes/go.mod kubernetes/go.sum kubernetes/etcd/main.go kwok/go.mod kwok/go.sum \
                registry/go.mod registry/go.sum build.sh; do
                printf '%s\n' "${f}"
                cat "${SRC}/${f}"
            done
            printf '%s\n' "${GO_VERSION}"
        } | sha256sum | cut -c1-16
    )"
    printf '%s/controlplane/%s\n' "${LAB_CACHE}" "${key}"
}

missing() {
    local c out=()
    for c in "${COMPONENTS[@]}"; do [[ -x "${BIN}/${c}" ]] || out+=("${c}"); done
    ((${#out[@]} == 0)) || printf '%s\n' "${out[@]}"
}

ldflags_of() {
    local c="$1" v
    case "${c}" in
        kube-* | kubectl)
            # What the release build stamps (hack/lib/version.sh), so /version, kubectl version
            # and Helm's kubeVersion checks see the release and not v0.0.0-master.
            v="$(pinned "${SRC}/kubernetes" k8s.io/kubernetes)"
            local major="${v#v}" minor
            minor="${major#*.}"; minor="${minor%%.*}"; major="${major%%.*}"
            local flags="-s -w" pkg
            for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
                flags+=" -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
                flags+=" -X ${pkg}.gitTreeState=clean"
            done
            printf '%s\n' "${flags}"
            ;;
        *) printf '%s\n' "-s -w" ;;
    esac
}

build() {
    local todo started t0 c mod
    mapfile -t todo < <(missing)
    if ((${#todo[@]} == 0)); then
        step "binaries cached in ${BIN}"
        return 0
    fi
    mkdir -p "${BIN}"
    exec 9>"${BIN}.lock"
    flock 9 # another build of the same key (a parallel scenario) finishes first
    mapfile -t todo < <(missing)
    ((${#todo[@]} == 0)) && { step "binaries cached in ${BIN}"; return 0; }

    export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
    started=${SECONDS}
    step "building ${todo[*]} into ${BIN} (${GO_VERSION#go version }; a cold build takes about 10 minutes on 2 cores)"
    for mod in "${SRC}/kubernetes" "${SRC}/kwok" "${SRC}/registry"; do
        t0=${SECONDS}
        step "download modules of ${mod#"${REPO_ROOT}"/} ..."
        (cd "${mod}" && go mod download -x 2>"${BIN}.download.log") ||
            { tail -n 20 "${BIN}.download.log" >&2; fail "download ${mod#"${REPO_ROOT}"/}" "go mod download failed (log above)"; }
        (cd "${mod}" && go mod verify >/dev/null 2>>"${BIN}.download.log") ||
            fail "verify ${mod#"${REPO_ROOT}"/}" "go mod verify failed: the module cache does not match go.sum"
        step "download modules of ${mod#"${REPO_ROOT}"/}: done in $((SECONDS - t0)) s"
        printf 'download:%s\t%s\t%s\t%s\n' "$(basename "${mod}")" "$((SECONDS - t0))" "${GO_VERSION#go version }" \
            "$(date -u +%FT%TZ)" >>"${BIN}/build-times.tsv"
    done
    for c in "${todo[@]}"; do
        t0=${SECONDS}
        step "build ${c} ($(package_of "${c}")) ..."
        (cd "$(module_of "${c}")" &&
            go build -trimpath -ldflags "$(ldflags_of "${c}")" -o "${BIN}/.${c}.partial" "$(package_of "${c}")") ||
            fail "build ${c}" "go build $(package_of "${c}") failed (output above)"
        mv -f "${BIN}/.${c}.partial" "${BIN}/${c}"
        step "build ${c}: done in $((SECONDS - t0)) s"
        printf '%s\t%s\t%s\t%s\n' "${c}" "$((SECONDS - t0))" "${GO_VERSION#go version }" "$(date -u +%FT%TZ)" \
            >>"${BIN}/build-times.tsv"
    done
    step "control plane built in $((SECONDS - started)) s: ${BIN}"
}

toolchain
BIN="$(cache_dir)"
case "${1:-}" in
    "") build; printf '%s\n' "${BIN}" ;;
    --dir) printf '%s\n' "${BIN}" ;;
    --check) [[ -z "$(missing)" ]] ;;
    *) die "usage: lab/controlplane/build.sh [--dir | --check]" ;;
esac
