# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/plan/doca.py, used by the doca_ofed and plan roles (repository
files, installed packages, reload and read-back); the plan computes the rest (gpufabric_node_plan.doca_ofed)."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def _errors():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.doca import DocaError
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

    return DocaError, ParseError


def doca_apt_source(url, keyring):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca

    return _doca.apt_source(url, keyring)


def doca_dnf_repo(url, key_url, repo_id="doca", gpgcheck=True):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca

    return _doca.dnf_repo(url, key_url, repo_id=repo_id, gpgcheck=gpgcheck)


def doca_installed(packages_facts, names=None):
    """ansible_facts.packages -> {name: version} (first installed version), limited to ``names``."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

    return _packages.first_versions(packages_facts, names)


def doca_pending_reload(stack, expected_release, kernel_modules):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca

    return _doca.pending_reload(stack or {}, expected_release, bool(kernel_modules))


def doca_release_matches(reported, expected):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca

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
            doca_apt_source,
            doca_dnf_repo,
            doca_installed,
            doca_pending_reload,
            doca_release_matches,
            doca_dkms_missing,
        ]
        return {func.__name__: filter_errors(_errors)(func) for func in funcs}
