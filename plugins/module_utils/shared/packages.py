# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package names the roles share: the running kernel's headers, the read of the installed packages
(modules installed_packages and plan_facts, ansible_facts.packages), and which wanted packages (at
which version) that read does not hold."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

# One line per installed package and architecture; the fields hold no spaces (dpkg-query(1), the
# db:Status-Abbrev virtual field: want, status and error flag letters, e.g. "ii" or "hi"; rpm(8)
# --queryformat tags, EPOCH printing "(none)" for a package without one).
DPKG_QUERY_FORMAT = "${Package} ${Version} ${Architecture} ${db:Status-Abbrev}\\n"
RPM_QUERY_FORMAT = "%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH}\\n"
# dpkg status letters (second of db:Status-Abbrev) of a package that is not on the node
DPKG_ABSENT = ("n", "c")
# The keys of an entry: the fields the collection reads (installed_versions; dnf pins
# version-release), not package_facts' name, arch and source. The read is sent to the controller
# and every later task of the node copies it with the node's facts: a GPU node has about a thousand
# packages, and without those three fields the list is less than half the JSON and a copy costs
# about 40 % less (docs/performance.md).
ENTRY_FIELDS = {"dpkg": ("version",), "rpm": ("version", "release", "epoch")}
MANAGERS = ("auto", "dpkg", "rpm")
QUERIES = {
    "dpkg": ["dpkg-query", "-W", "-f=" + DPKG_QUERY_FORMAT],
    "rpm": ["rpm", "-qa", "--queryformat", RPM_QUERY_FORMAT],
}


class PackagesError(Exception):
    """The package database cannot be read; ``rc`` is the query's exit status when it ran."""

    def __init__(self, msg: str, rc: Optional[int] = None) -> None:
        super().__init__(msg)
        self.rc = rc


def read_installed(runner: Any, manager: str = "auto") -> Tuple[str, Dict[str, List[Dict[str, Any]]]]:
    """(the manager read, package_facts' {name: [entries]}) with one query through ``runner``
    (``shared.host.Runner``): ``auto`` takes dpkg when dpkg-query is found, else rpm."""
    if manager == "auto":
        manager = "dpkg" if runner.which("dpkg-query") else "rpm"
    argv = QUERIES[manager]
    if not runner.which(argv[0]):
        raise PackagesError(f"manager: {manager} needs {argv[0]}, which is not on the PATH of this host")
    rc, out, err = runner.run(argv)
    if rc != 0:
        raise PackagesError(f"{' '.join(argv[:2])} failed (exit {rc}): {err.strip()}", rc)
    return manager, (parse_dpkg_query if manager == "dpkg" else parse_rpm_query)(out)


def parse_dpkg_query(stdout: Optional[str]) -> Dict[str, List[Dict[str, Any]]]:
    """package_facts' {name: [entries]} from ``dpkg-query -W -f=DPKG_QUERY_FORMAT`` output: every
    package but those not installed or with their configuration files left only. An entry holds
    the version only (ENTRY_FIELDS): one per installed architecture, in the database's order."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for line in (stdout or "").splitlines():
        fields = line.split()
        if len(fields) != 4 or len(fields[3]) < 2 or fields[3][1] in DPKG_ABSENT:
            continue
        out.setdefault(fields[0], []).append({"version": fields[1]})
    return out


def parse_rpm_query(stdout: Optional[str]) -> Dict[str, List[Dict[str, Any]]]:
    """package_facts' {name: [entries]} from ``rpm -qa --queryformat RPM_QUERY_FORMAT`` output; an
    entry holds the version and release, and the epoch when the package has one (ENTRY_FIELDS)."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for line in (stdout or "").splitlines():
        fields = line.split()
        if len(fields) != 5:
            continue
        name, epoch, version, release = fields[:4]
        entry: Dict[str, Any] = {"version": version, "release": release}
        if epoch != "(none)":
            entry["epoch"] = int(epoch) if epoch.isdigit() else epoch
        out.setdefault(name, []).append(entry)
    return out


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


def first_versions(packages_facts: Optional[Dict[str, Any]], names: Optional[Iterable[str]] = None) -> Dict[str, str]:
    """{name: the first installed version} of ``packages_facts`` (package_facts' {name: [entries]}),
    limited to ``names`` when given."""
    wanted = set(names) if names else None
    out = {}
    for name, entries in (packages_facts or {}).items():
        if wanted is not None and name not in wanted:
            continue
        if entries:
            out[name] = installed_versions(entries[:1])[0]
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
