#!/usr/bin/env bash
# Build the local base image for the execution environment: a stand-in for
# docker.io/library/python:3.12-slim-bookworm (execution-environment.yml's default base), which no
# registry here can serve. Debian 12 minbase made with debootstrap and imported into podman, with
# a Python 3.12 and pip at /usr/local/bin/python3 like the official image (Debian 12's own Python is
# 3.11: the controller's Python 3.12 that lab/python.sh finds is copied in under /opt, as the
# official image builds its own under /usr/local), and no apt
# package lists (like a slim image: the EE build must fetch them itself). The CA certificates this
# machine added locally (/usr/local/share/ca-certificates, e.g. a TLS-inspecting egress proxy's)
# are trusted in the image too, as an organisation's own base image would; without them pip in the
# build cannot reach PyPI from such a network.
# Cached: the tag is a hash of this script and of those certificates.
#
# Usage: lab/ee/base.sh          build if missing, print the image reference
#        lab/ee/base.sh --ref    print the image reference only
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/common.sh"

shopt -s nullglob
local_cas=(/usr/local/share/ca-certificates/*.crt)
python="$("${LAB_ROOT}/python.sh")"
prefix="$("${python}" -c 'import sys; print(sys.base_prefix)')"
pyver="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
ref="localhost/gpufabric-ee-base:$({ cat "${BASH_SOURCE[0]}" "${local_cas[@]}"; "${python}" -VV; } | sha256sum | cut -c1-12)"
[[ "${1:-}" == "--ref" ]] && { echo "${ref}"; exit 0; }
[[ -z "${1:-}" ]] || die "unknown argument: $1 (use --ref)"

lab_require_tools
lab_containers_conf
if podman image exists "${ref}"; then
    log "image ${ref} is up to date"
    echo "${ref}"
    exit 0
fi
[[ "$(id -u)" == 0 ]] || die "debootstrap needs root"

mirror="${LAB_DEBIAN_MIRROR:-}"
if [[ -z "${mirror}" ]]; then
    mirror="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
fi
if [[ -z "${mirror}" ]]; then
    mirror="$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-ee-base.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
log "debootstrap bookworm from ${mirror} (python3, pip, ca-certificates)"
debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates bookworm "${work}/rootfs" "${mirror}" \
    >"${work}/debootstrap.log" 2>&1 || { tail -n 40 "${work}/debootstrap.log" >&2; die "debootstrap failed"; }
cat >"${work}/rootfs/etc/apt/sources.list" <<SRC
deb ${mirror} bookworm main
deb ${mirror} bookworm-updates main
SRC
if ((${#local_cas[@]} > 0)); then
    cp "${local_cas[@]}" "${work}/rootfs/usr/local/share/ca-certificates/"
    chroot "${work}/rootfs" update-ca-certificates >/dev/null
fi
mkdir -p "${work}/rootfs/opt/python${pyver}"
cp -a "${prefix}/." "${work}/rootfs/opt/python${pyver}/"
[[ -x "${work}/rootfs/opt/python${pyver}/bin/python${pyver}" ]] || die "no python${pyver} under ${prefix}"
# The copy's own run path (RUNPATH) still names where it was built; the loader finds its
# libpython under /opt through ld.so.conf instead.
echo "/opt/python${pyver}/lib" >"${work}/rootfs/etc/ld.so.conf.d/python${pyver}.conf"
chroot "${work}/rootfs" ldconfig
ln -s "/opt/python${pyver}/bin/python${pyver}" "${work}/rootfs/usr/local/bin/python3"
ln -s "/opt/python${pyver}/bin/python${pyver}" "${work}/rootfs/usr/local/bin/python"
chroot "${work}/rootfs" /usr/local/bin/python3 -c 'import ssl, ensurepip, sqlite3, ctypes' ||
    die "the copied Python ${pyver} does not run inside the image"
rm -rf "${work}"/rootfs/var/lib/apt/lists/* "${work}"/rootfs/var/cache/apt/*.bin

log "importing ${ref}"
# The copy's bin/ comes first on PATH, where pip puts the scripts of what it installs (ansible-galaxy,
# ansible-playbook, ansible-runner): the official image has them in /usr/local/bin, its prefix.
tar -C "${work}/rootfs" -c . |
    podman import --change 'CMD ["/bin/bash"]' \
        --change "ENV PATH=/opt/python${pyver}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        - "${ref}" >/dev/null
log "built ${ref}"
echo "${ref}"
