# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/_doca.py, used by the doca_ofed role."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils import _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils._parse import ParseError
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def doca_repo_url(base_url, release, os_token, arch_token):
    return _doca.repo_url(base_url, release, os_token, arch_token)


def doca_os_token(distribution, version):
    return _doca.os_token(distribution, version)


def doca_arch_token(machine):
    return _doca.arch_token(machine)


def doca_apt_source(url, keyring):
    return _doca.apt_source(url, keyring)


def doca_dnf_repo(url, key_url, repo_id="doca", gpgcheck=True):
    return _doca.dnf_repo(url, key_url, repo_id=repo_id, gpgcheck=gpgcheck)


def doca_profile(profile, storage_components=(), kernel="", family="Debian"):
    return _doca.profile_packages(profile, storage_components, kernel, family)


def doca_intent_error(profile, storage_components=()):
    """'' when the profile/storage intent is valid, else the message naming the variable."""
    try:
        _doca.profile_packages(profile, storage_components)
    except _doca.DocaError as exc:
        return str(exc)
    return ""


def doca_version_error(index, package, wanted):
    """'' when the repository index carries ``package`` at ``wanted``, else the refusal message."""
    try:
        _doca.select_version(index or {}, package, wanted)
    except _doca.DocaError as exc:
        return str(exc)
    return ""


def doca_select_version(index, package, wanted):
    return _doca.select_version(index or {}, package, wanted)


def doca_exact_dependencies(depends):
    return _doca.exact_dependencies(depends)


def doca_release_from_dkms_version(version):
    return _doca.ofed_release_from_dkms_version(version)


def doca_installed(packages_facts, names=None):
    """ansible_facts.packages -> {name: version} (first installed version), limited to ``names``."""
    wanted = set(names) if names else None
    result = {}
    for name, entries in (packages_facts or {}).items():
        if wanted is not None and name not in wanted:
            continue
        if entries:
            entry = entries[0]
            version = str(entry.get("version", ""))
            if entry.get("release"):
                version = "{}-{}".format(version, entry["release"])
            result[name] = version
    return result


def doca_pending_reload(stack, expected_release, kernel_modules):
    return _doca.pending_reload(stack or {}, expected_release, bool(kernel_modules))


def doca_release_matches(reported, expected):
    return _doca.release_matches(reported, expected)


def doca_dkms_missing(dkms_entries, modules, version, kernel):
    """DKMS modules (of ``modules``) not ``installed`` at ``version`` for ``kernel``."""
    have = {
        (e["module"], e["version"])
        for e in dkms_entries or []
        if e.get("kernel") == kernel and e.get("state") == "installed"
    }
    return [m for m in modules or [] if (m, version) not in have]


class FilterModule:
    def filters(self):
        funcs = [
            doca_repo_url,
            doca_os_token,
            doca_arch_token,
            doca_apt_source,
            doca_dnf_repo,
            doca_profile,
            doca_intent_error,
            doca_version_error,
            doca_select_version,
            doca_exact_dependencies,
            doca_release_from_dkms_version,
            doca_installed,
            doca_pending_reload,
            doca_release_matches,
            doca_dkms_missing,
        ]
        return {func.__name__: filter_errors(_doca.DocaError, ParseError)(func) for func in funcs}
