# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DOCA-OFED: repository URLs and profile package sets (repository indexes and versions:
``plan.doca_index``; the installed stack: ``plan.doca_stack``), and whether the loaded driver
matches the expected release.

Pure functions, no Ansible imports; used by the doca_ofed role (through filters) and by the
``doca_repo_info`` / ``doca_ofed_facts`` modules.

Sources (see docs facts §5.3): the public repository layout is
``<base>/<release>/<os token>/<arch token>/`` (release: ``2.9.1``, ``latest``, ``latest-2.9-LTS``;
OS token: ``ubuntu24.04``, ``rhel9.4``; arch token: ``x86_64`` or ``arm64-sbsa``), a flat apt
repository (``deb [signed-by=KEY] URL ./``) or a dnf repository with ``repodata/``, signed by
``<base>/GPG-KEY-Mellanox.pub``. DOCA-Host profiles are metapackages (``doca-ofed``,
``doca-roce``, ``doca-ofed-userspace``...); kernel modules are DKMS packages
(``mlnx-ofed-kernel-dkms``, ``mlnx-nfsrdma-dkms``, ``mlnx-nvme-dkms``). ``ofed_info -s`` prints
``MLNX_OFED_LINUX-<ver>:`` for standalone MLNX_OFED and ``OFED-internal-<ver>:`` for DOCA-OFED.

Parsers of outside text (in ``plan.doca_index`` and ``plan.doca_stack``):
``parse_packages_index``/``parse_packages_depends`` (apt ``Packages``), ``primary_location``/
``parse_primary_xml`` (dnf repodata) raise ParseError naming the line of a malformed document or
version; ``parse_ofed_info`` and ``parse_dkms_status`` read leniently (None / lines they do not
recognise are left out: dkms prints errors between its entries).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.doca_index import DocaError
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

DEFAULT_BASE_URL = "https://linux.mellanox.com/public/repo/doca"
GPG_KEY_NAME = "GPG-KEY-Mellanox.pub"

# Profile -> (metapackage, has kernel modules). Documented in roles/doca_ofed/README.md.
PROFILES = {
    "doca-ofed": ("doca-ofed", True),
    "doca-roce": ("doca-roce", True),
    "doca-ofed-userspace": ("doca-ofed-userspace", False),
    "doca-roce-userspace": ("doca-roce-userspace", False),
}
KERNEL_PACKAGES = ("mlnx-ofed-kernel-dkms", "mlnx-ofed-kernel-utils")
USERSPACE_PACKAGES = ("ofed-scripts", "mlnx-tools", "ibverbs-utils", "infiniband-diags", "perftest")
STORAGE_PACKAGES = {"nfsrdma": "mlnx-nfsrdma-dkms", "nvmf": "mlnx-nvme-dkms"}
# DKMS module names as `dkms status` lists them, per DKMS package.
DKMS_MODULES = {
    "mlnx-ofed-kernel-dkms": "mlnx-ofed-kernel",
    "mlnx-nfsrdma-dkms": "mlnx-nfsrdma",
    "mlnx-nvme-dkms": "mlnx-nvme",
}
ARCH_TOKENS = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64-sbsa", "arm64": "arm64-sbsa"}
RHEL_LIKE = ("RedHat", "Rocky", "AlmaLinux", "CentOS", "OracleLinux")


def stack_package_names() -> List[str]:
    """Every package whose presence tells the RDMA stack apart (profiles, components, MLNX_OFED)."""
    names = [meta for meta, _kernel in PROFILES.values()]
    names += list(KERNEL_PACKAGES) + list(STORAGE_PACKAGES.values()) + list(USERSPACE_PACKAGES)
    return sorted(set(names) | {"mlnx-ofed-all", "mlnx-ofed-basic"})


# --------------------------------------------------------------------------- repository URLs
def os_token(distribution: str, version: str) -> str:
    """'Ubuntu', '24.04' -> 'ubuntu24.04'; 'RedHat', '9.4' -> 'rhel9.4'; 'Debian', '12' -> 'debian12'."""
    if not distribution or not version:
        raise DocaError(
            f"doca_ofed_repo_os: cannot derive the OS token (distribution {distribution!r}, "
            f"version {version!r}); set it"
        )
    if distribution in RHEL_LIKE:
        return "rhel" + version
    return distribution.lower().replace(" ", "") + version


def arch_token(machine: str) -> str:
    try:
        return ARCH_TOKENS[machine]
    except KeyError:
        raise DocaError(
            "doca_ofed_repo_arch: no DOCA repository for architecture {!r} (known: {})".format(
                machine, ", ".join(sorted(ARCH_TOKENS))
            )
        ) from None


def repo_url(base_url: str, release: str, os_tok: str, arch_tok: str) -> str:
    """<base>/<release>/<os>/<arch>/ with exactly one slash between the pieces."""
    pieces = [str(base_url).rstrip("/")] + [str(p).strip("/") for p in (release, os_tok, arch_tok)]
    for name, piece in zip(
        ("doca_ofed_repo_base_url", "doca_ofed_repo_release", "doca_ofed_repo_os", "doca_ofed_repo_arch"), pieces
    ):
        if not piece or any(c.isspace() for c in piece):
            raise DocaError(f"{name}: {piece!r} is empty or has whitespace")
    if not re.match(r"^(https?|file)://", pieces[0]):
        raise DocaError(f"doca_ofed_repo_base_url: {pieces[0]!r} is not an http(s):// or file:// URL")
    return "/".join(pieces) + "/"


def gpg_key_url(base_url: str) -> str:
    return str(base_url).rstrip("/") + "/" + GPG_KEY_NAME


def apt_source(url: str, keyring: str) -> str:
    """One-line apt source for the flat DOCA repository."""
    return f"deb [signed-by={keyring}] {url} ./"


def dnf_repo(
    url: str,
    key_url: str,
    repo_id: str = "doca",
    name: str = "NVIDIA DOCA-Host",
    gpgcheck: bool = True,
    module_hotfixes: bool = True,
) -> str:
    """The /etc/yum.repos.d/<id>.repo text for the DOCA repository."""
    if not re.match(r"^[A-Za-z0-9_.:-]+$", repo_id):
        raise DocaError(f"doca_ofed_repo_id: {repo_id!r} is not a valid repository id")
    lines = [
        f"[{repo_id}]",
        f"name={name}",
        f"baseurl={url}",
        "enabled=1",
        f"gpgcheck={int(bool(gpgcheck))}",
    ]
    if gpgcheck:
        lines.append(f"gpgkey={key_url}")
    if module_hotfixes:
        # DOCA's kernel packages replace RHEL's inbox rdma-core modules; without this, modular
        # filtering on RHEL 8/9 hides them.
        lines.append("module_hotfixes=1")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- profiles
def profile_packages(
    profile: str, storage_components: Sequence[str] = (), kernel: str = "", family: str = "Debian"
) -> Dict[str, Any]:
    """What a profile installs, what is held at the pinned version, and the prerequisites."""
    if profile not in PROFILES:
        raise DocaError(
            "doca_ofed_profile: {!r} is not a DOCA-Host profile; choose one of {}".format(
                profile, ", ".join(sorted(PROFILES))
            )
        )
    meta, has_kernel = PROFILES[profile]
    storage = list(storage_components or [])
    unknown = [s for s in storage if s not in STORAGE_PACKAGES]
    if unknown:
        raise DocaError(
            "doca_ofed_storage_components: {} unknown; allowed: {}".format(
                ", ".join(map(str, unknown)), ", ".join(sorted(STORAGE_PACKAGES))
            )
        )
    if storage and not has_kernel:
        raise DocaError(
            "doca_ofed_storage_components: {} need kernel modules, but profile {} is user space only".format(
                ", ".join(storage), profile
            )
        )
    kernel_pkgs = list(KERNEL_PACKAGES) if has_kernel else []
    storage_pkgs = [STORAGE_PACKAGES[s] for s in storage]
    prereq: List[str] = []
    if has_kernel:
        prereq = ["dkms", _packages.kernel_headers(family, kernel)]
    return {
        "profile": profile,
        "metapackage": meta,
        "kernel_modules": has_kernel,
        "install": [meta, *storage_pkgs],
        "hold": [meta, *kernel_pkgs, *storage_pkgs, *list(USERSPACE_PACKAGES)],
        "dkms_modules": [DKMS_MODULES[p] for p in kernel_pkgs + storage_pkgs if p in DKMS_MODULES],
        "prerequisites": prereq,
    }


def release_matches(reported: Optional[str], expected: Optional[str]) -> bool:
    """'24.10-1.1.4.0.200' (ofed_info) matches '24.10-1.1.4'; '24.10-1.1.40' does not."""
    if not reported or not expected:
        return False
    return reported == expected or reported.startswith(expected + ".")


def pending_reload(stack: Mapping[str, Any], expected_release: Optional[str], kernel_modules: bool) -> Optional[str]:
    """Why the running driver stack differs from the installed one, or None when nothing is pending."""
    if not kernel_modules or not expected_release:
        return None
    if stack.get("loaded") == "none":
        # Nothing RDMA is loaded, so nothing runs on it: starting openibd is a first load, not a reload.
        return None
    if stack.get("loaded") != "ofed":
        return "the {} driver stack is loaded; DOCA-OFED {} is installed but not running".format(
            stack.get("loaded"), expected_release
        )
    if not release_matches(stack.get("loaded_release"), expected_release):
        return "mlx5_core {} is loaded; DOCA-OFED {} is installed".format(stack.get("loaded_release"), expected_release)
    return None
