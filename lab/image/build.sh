#!/usr/bin/env bash
# Build the lab node image: Debian 12 (bookworm) with systemd as PID 1, made with debootstrap
# and imported into podman. Cached: the tag is a hash of this script and packages.txt, so the
# image is rebuilt only when its recipe changes.
#
# Usage: lab/image/build.sh          build if missing, print the image reference
#        lab/image/build.sh --ref    print the image reference only
#        lab/image/build.sh --force  rebuild even when present
set -euo pipefail
# shellcheck source=lab/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/common.sh"

ref="$(lab_image_ref)"
case "${1:-}" in
    --ref) echo "${ref}"; exit 0 ;;
    --force) force=1 ;;
    "") force=0 ;;
    *) die "unknown argument: $1 (use --ref or --force)" ;;
esac

lab_require_tools
lab_containers_conf

if [[ "${force}" == 0 ]] && podman image exists "${ref}"; then
    log "image ${ref} is up to date"
    echo "${ref}"
    exit 0
fi

[[ "$(id -u)" == 0 ]] || die "debootstrap needs root"

# The Debian mirror this machine already uses (deb822 or one-line sources), else the default.
mirror="${LAB_DEBIAN_MIRROR:-}"
if [[ -z "${mirror}" ]]; then
    mirror="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
fi
if [[ -z "${mirror}" ]]; then
    mirror="$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

packages="$(grep -Ev '^\s*(#|$)' "${LAB_ROOT}/image/packages.txt" | paste -sd, -)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-lab-image.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

log "debootstrap bookworm from ${mirror} (packages: ${packages})"
debootstrap --variant=minbase --include="${packages}" bookworm "${work}/rootfs" "${mirror}" \
    >"${work}/debootstrap.log" 2>&1 || { tail -n 40 "${work}/debootstrap.log" >&2; die "debootstrap failed"; }

# Point apt inside the image at the same mirror; keep the package lists (an image with empty
# lists looks freshly updated to apt's cache_valid_time and installs then fail).
cat >"${work}/rootfs/etc/apt/sources.list" <<SRC
deb ${mirror} bookworm main
deb ${mirror} bookworm-updates main
SRC
chroot "${work}/rootfs" apt-get update -qq >/dev/null 2>&1 || log "apt-get update inside the image failed; continuing"
# A container has no consoles to attach gettys to, and needs no network management of its own.
for unit in getty@tty1.service console-getty.service systemd-networkd.service \
            systemd-resolved.service systemd-timesyncd.service; do
    chroot "${work}/rootfs" systemctl mask "${unit}" >/dev/null 2>&1 || true
done
echo "gpufabric-lab" >"${work}/rootfs/etc/hostname"

log "importing ${ref}"
tar -C "${work}/rootfs" -c . | podman import --change 'CMD ["/sbin/init"]' - "${ref}" >/dev/null
log "built ${ref}"
echo "${ref}"
