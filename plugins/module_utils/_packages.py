# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package names the roles share: the running kernel's headers, and which wanted packages (at which
version) the plan's package read (ansible_facts.packages) does not hold."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional


def kernel_headers(family: Optional[str], kernel: Optional[str]) -> str:
    """The distribution's package with the headers of ``kernel`` (its generic one without a kernel)."""
    if family == "RedHat":
        return f"kernel-devel-{kernel}" if kernel else "kernel-devel"
    return f"linux-headers-{kernel}" if kernel else "linux-headers-generic"


def installed_versions(entries: Any) -> List[str]:
    """The versions package_facts lists for one package (RPM: version-release, as dnf pins them)."""
    out = []
    for entry in entries or []:
        version = str(entry.get("version", ""))
        if entry.get("release"):
            version = f"{version}-{entry['release']}"
        out.append(version)
    return out


def missing(wanted: Iterable[str], packages_facts: Optional[Dict[str, Any]]) -> List[str]:
    """The specs in ``wanted`` that ``packages_facts`` (package_facts' {name: [entries]}) does not
    satisfy, in order. A spec is ``name`` (installed at any version), ``name=version`` (installed at
    exactly that version, as apt pins it) or ``name=version*`` (a version starting so)."""
    have = packages_facts or {}
    out = []
    for spec in wanted or []:
        name, _sep, version = str(spec).partition("=")
        versions = installed_versions(have.get(name))
        if not versions:
            out.append(spec)
        elif version.endswith("*"):
            if not any(v.startswith(version[:-1]) for v in versions):
                out.append(spec)
        elif version and version not in versions:
            out.append(spec)
    return out
