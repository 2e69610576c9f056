# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks every intent rule file uses: ranges, DNS names, CIDRs, versions.

Each takes the problems list, the variable path and the value, appends a problem naming the path,
the value and what is allowed, and says whether the value passed. The rule files (intent.rules,
intent.storage) import these; this module imports no rule file, so the rules form no circle.
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Any, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

Problems = List[str]

VERSION_RE = re.compile(r"^\d{1,4}\.\d{1,4}(\.\d{1,6})?$")
# A Helm chart version: SemVer 2.0.0 (semver.org: MAJOR.MINOR.PATCH, then -pre-release and +build of
# [0-9A-Za-z-] dot-separated identifiers), with the "v" prefix Helm accepts. Checked with fullmatch,
# like every format here: re.match with "$" would still let a trailing newline (and what follows it
# in a rendered file) through.
CHART_VERSION_RE = re.compile(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def in_range(problems: Problems, path: str, value: Any, low: int, high: int) -> bool:
    """True when value is an int in low..high; else a problem naming path and the range."""
    if value is None:
        return False
    if not is_int(value) or not low <= value <= high:
        problems.append(f"{path}: {show(value)} is out of range; allowed: {low}-{high}")
        return False
    return True


def dns_label(problems: Problems, path: str, value: Any) -> bool:
    if isinstance(value, str) and DNS_LABEL_RE.fullmatch(value):
        return True
    problems.append(
        f"{path}: {show(value)} is not a DNS label (lower-case letters, digits and '-', starting and "
        "ending with a letter or digit, at most 63 characters)"
    )
    return False


def dns_subdomain(problems: Problems, path: str, value: Any) -> bool:
    if isinstance(value, str) and len(value) <= 253 and DNS_SUBDOMAIN_RE.fullmatch(value):
        return True
    problems.append(
        f"{path}: {show(value)} is not a DNS subdomain (dot-separated DNS labels, lower case, at most 253 characters)"
    )
    return False


def ipv4_network(problems: Problems, path: str, value: Any) -> Optional[ipaddress.IPv4Network]:
    """An IPv4 CIDR (host bits must be zero), else a problem."""
    try:
        net = ipaddress.ip_network(str(value), strict=True)
    except ValueError as exc:
        problems.append(f"{path}: {show(value)} is not a CIDR ({exc})")
        return None
    if net.version != 4:
        problems.append(f"{path}: {show(value)} is IPv6; rail networks are planned in IPv4 (RoCE v2 IPv4 GIDs)")
        return None
    return net


def any_network(problems: Problems, path: str, value: Any):
    try:
        return ipaddress.ip_network(str(value), strict=True)
    except ValueError as exc:
        problems.append(f"{path}: {show(value)} is not a CIDR ({exc})")
        return None


def version(problems: Problems, path: str, value: Any) -> Optional[Tuple[int, ...]]:
    text = str(value) if value is not None else ""
    if not VERSION_RE.fullmatch(text):
        problems.append(f"{path}: {show(value)} is not a version like 2.27.3 (MAJOR.MINOR or MAJOR.MINOR.PATCH)")
        return None
    return version_numbers(text)


def keyring_file(problems: Problems, var: str, value: Any) -> None:
    """A chart provenance keyring: empty (not verified), or an absolute path to a file on the controller."""
    if value in (None, ""):
        return
    if not (isinstance(value, str) and value.startswith("/") and os.path.isfile(value)):
        problems.append(
            f"{var}: {value!r} is not a keyring file on the controller; allowed: an absolute path to a public keyring "
            "(gpg --export KEYID > FILE), or '' to install the chart unverified"
        )
