#!/usr/bin/env bash
# Build the lab node image: Debian 12 (bookworm) with systemd as PID 1 and sshd, made with
# debootstrap and imported into podman. Nodes are reached as servers are: over SSH as the
# unprivileged user `ansible`, which becomes root with sudo. The image carries no key and no
# host key: lab/nodes.sh gives each node the checkout's lab key and its own listen port, and
# each node makes its host key at its first boot.
# Built once per machine: the podman image store is the cache, and the tag is a hash of
# everything under lab/image/ (lab_image_tag), so the image is rebuilt only when its recipe
# changes.
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

lab_step "debootstrap bookworm from ${mirror} (packages: ${packages})" "${work}/debootstrap.log" \
    debootstrap --variant=minbase --include="${packages}" bookworm "${work}/rootfs" "${mirror}" ||
    die "debootstrap failed"

# Point apt inside the image at the same mirror; keep the package lists (an image with empty
# lists looks freshly updated to apt's cache_valid_time and installs then fail).
cat >"${work}/rootfs/etc/apt/sources.list" <<SRC
deb ${mirror} bookworm main
deb ${mirror} bookworm-updates main
SRC
lab_step "apt-get update inside the image" "${work}/apt-update.log" chroot "${work}/rootfs" apt-get update ||
    log "apt-get update inside the image failed; continuing"
# A container has no consoles to attach gettys to, and needs no network management of its own.
for unit in getty@tty1.service console-getty.service systemd-networkd.service \
            systemd-resolved.service systemd-timesyncd.service; do
    chroot "${work}/rootfs" systemctl mask "${unit}" >/dev/null 2>&1 || true
done
echo "gpufabric-lab" >"${work}/rootfs/etc/hostname"

# The managed-server side of SSH: the unprivileged Ansible user with passwordless sudo, sshd
# with keys only, no host key in the image (each node makes its own at first boot).
rootfs="${work}/rootfs"
chroot "${rootfs}" useradd --create-home --shell /bin/bash --user-group ansible
install -d -m 0700 "${rootfs}/home/ansible/.ssh"
chroot "${rootfs}" chown ansible:ansible /home/ansible/.ssh
install -m 0440 "${LAB_ROOT}/image/files/sudoers" "${rootfs}/etc/sudoers.d/gpufabric-lab-ansible"
chroot "${rootfs}" visudo -cq -f /etc/sudoers.d/gpufabric-lab-ansible || die "invalid sudoers drop-in"
install -m 0644 "${LAB_ROOT}/image/files/sshd_config" "${rootfs}/etc/ssh/sshd_config.d/10-gpufabric-lab.conf"
rm -f "${rootfs}"/etc/ssh/ssh_host_*
install -m 0644 "${LAB_ROOT}/image/files/gpufabric-lab-ssh-hostkey.service" "${rootfs}/etc/systemd/system/"
chroot "${rootfs}" systemctl enable gpufabric-lab-ssh-hostkey.service ssh.service >/dev/null 2>&1 ||
    die "could not enable sshd in the image"

import_image() { tar -C "${work}/rootfs" -c . | podman import --change 'CMD ["/sbin/init"]' - "${ref}"; }
lab_step "importing ${ref}" "${work}/import.log" import_image || die "podman import failed"
log "built ${ref}"
echo "${ref}"
