# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DOCA-OFED: repository URLs, profile package sets, repository indexes, installed-stack detection.

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

Parsers of outside text: ``parse_packages_index``/``parse_packages_depends`` (apt ``Packages``),
``primary_location``/``parse_primary_xml`` (dnf repodata) raise ParseError naming the line of a
malformed document or version; ``parse_ofed_info`` and ``parse_dkms_status`` read leniently
(None / lines they do not recognise are left out: dkms prints errors between its entries).
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, as_text, integer

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


class DocaError(ValueError):
    """Bad intent or unusable input; the message names the variable."""


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


# --------------------------------------------------------------------------- versions
def _dpkg_order(char: str) -> int:
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _dpkg_cmp_part(left: str, right: str) -> int:
    """Debian policy §5.6.12 comparison of an upstream-version or revision string."""
    i = j = 0
    while i < len(left) or j < len(right):
        first_diff = 0
        while (i < len(left) and not left[i].isdigit()) or (j < len(right) and not right[j].isdigit()):
            lc = _dpkg_order(left[i]) if i < len(left) and not left[i].isdigit() else 0
            rc = _dpkg_order(right[j]) if j < len(right) and not right[j].isdigit() else 0
            if lc != rc:
                return -1 if lc < rc else 1
            i += 1
            j += 1
        while i < len(left) and left[i] == "0":
            i += 1
        while j < len(right) and right[j] == "0":
            j += 1
        while i < len(left) and left[i].isdigit() and j < len(right) and right[j].isdigit():
            if not first_diff:
                first_diff = ord(left[i]) - ord(right[j])
            i += 1
            j += 1
        if i < len(left) and left[i].isdigit():
            return 1
        if j < len(right) and right[j].isdigit():
            return -1
        if first_diff:
            return -1 if first_diff < 0 else 1
    return 0


def _split_version(version: str) -> Tuple[int, str, str]:
    """(epoch, upstream, revision); ParseError when the epoch is not a number or nothing is left."""
    epoch, _sep, rest = version.partition(":") if ":" in version else ("0", "", version)
    upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
    if not upstream or not re.fullmatch(r"[A-Za-z0-9.+~_:^-]+", rest):
        raise ParseError(f"version {version!r} is not [epoch:]upstream[-revision]")
    return integer(epoch or "0", f"version {version!r}: epoch", 0), upstream, revision


def compare_versions(left: str, right: str) -> int:
    """dpkg-style comparison (-1, 0, 1); also orders RPM version-release strings sensibly."""
    le, lu, lr = _split_version(str(left))
    re_, ru, rr = _split_version(str(right))
    if le != re_:
        return -1 if le < re_ else 1
    return _dpkg_cmp_part(lu, ru) or _dpkg_cmp_part(lr, rr)


def sort_versions(versions: Iterable[str]) -> List[str]:
    return sorted(set(versions), key=functools.cmp_to_key(compare_versions))


def version_matches(candidate: str, wanted: str) -> bool:
    """'2.9.1-0.1.4' matches wanted '2.9.1' or '2.9.1-0.1.4'; '2.9.10-1' and '2.9' do not match '2.9.1'."""
    candidate = str(candidate)
    wanted = str(wanted)
    return candidate == wanted or candidate.startswith(wanted + "-")


def select_version(available: Mapping[str, Sequence[str]], package: str, wanted: str) -> str:
    """The newest version of ``package`` that ``wanted`` pins; DocaError naming the variable if none."""
    versions = available.get(package) or []
    if not versions:
        raise DocaError(
            f"doca_ofed_profile: the repository carries no {package} package (it has {len(available)} packages)"
        )
    matching = [v for v in versions if version_matches(v, wanted)]
    if not matching:
        raise DocaError(
            "doca_ofed_version: {} is not in the repository; {} versions there: {}".format(
                wanted, package, ", ".join(sort_versions(versions))
            )
        )
    return sort_versions(matching)[-1]


# --------------------------------------------------------------------------- repository indexes
def _stanzas(text: Any) -> Iterable[Dict[str, Any]]:
    """deb822 stanzas of an apt ``Packages`` file: {field (lower case): value, "_line": (lineno, line)}.

    Continuation lines (leading blank) and comments are skipped; each Version is checked, so a
    malformed one is reported with its line."""
    fields: Dict[str, Any] = {}
    for lineno, line in enumerate(as_text(text, "Packages index").replace("\r\n", "\n").split("\n"), 1):
        if not line.strip():
            if fields:
                yield fields
            fields = {}
            continue
        if line[0] in " \t#" or ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
        if key.strip().lower() == "version":
            try:
                _split_version(value.strip())
            except ParseError as exc:
                raise ParseError(exc.message, line=line, lineno=lineno) from None
    if fields:
        yield fields


def parse_packages_index(text: Any) -> Dict[str, List[str]]:
    """An apt ``Packages`` file (deb822 stanzas) -> {package: [versions, oldest first]}."""
    found: Dict[str, List[str]] = {}
    for fields in _stanzas(text):
        if "package" in fields and "version" in fields:
            found.setdefault(fields["package"], []).append(fields["version"])
    return {name: sort_versions(versions) for name, versions in found.items()}


def parse_packages_depends(text: Any, prefix: str = "doca-") -> Dict[str, Dict[str, str]]:
    """``Depends`` of the packages whose name starts with ``prefix``: {package: {version: depends}}."""
    found: Dict[str, Dict[str, str]] = {}
    for fields in _stanzas(text):
        name = fields.get("package", "")
        if name.startswith(prefix) and "version" in fields:
            found.setdefault(name, {})[fields["version"]] = fields.get("depends", "")
    return found


def exact_dependencies(depends: str) -> Dict[str, str]:
    """'a (= 1.0), b (>= 2), c' -> {'a': '1.0'}: the components a metapackage pins exactly."""
    pinned = {}
    for item in as_text(depends or "", "Depends").split(","):
        match = re.match(r"^\s*([a-z0-9][a-z0-9+.-]*)(?::\S+)?\s*\(\s*=\s*([^)\s]+)\s*\)\s*$", item.split("|")[0])
        if match:
            pinned[match.group(1)] = match.group(2)
    return pinned


_COMMON_NS = "{http://linux.duke.edu/metadata/common}"
_REPO_NS = "{http://linux.duke.edu/metadata/repo}"


def _xml(text: Any, what: str) -> ET.Element:
    """The root element of an XML document; ParseError naming the line of a syntax error.

    Python's expat refuses entity-expansion bombs; ElementTree fetches no external entities."""
    text = as_text(text, what)
    try:
        return ET.fromstring(text)
    except (UnicodeError, ValueError) as exc:  # lone surrogates, an encoding declaration a str cannot have
        raise ParseError(f"{what} is not well-formed XML ({exc})") from None
    except ET.ParseError as exc:
        lineno = exc.position[0] if getattr(exc, "position", None) else None
        lines = text.splitlines()
        line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None
        raise ParseError(f"{what} is not well-formed XML ({exc})", line=line, lineno=lineno) from None


def primary_location(repomd_xml: Any) -> str:
    """repodata/repomd.xml -> the href of the primary metadata (e.g. repodata/<sum>-primary.xml.gz)."""
    root = _xml(repomd_xml, "repomd.xml")
    for data in root.findall(_REPO_NS + "data"):
        if data.get("type") == "primary":
            location = data.find(_REPO_NS + "location")
            if location is not None and location.get("href"):
                return location.get("href")  # type: ignore[return-value]
    raise DocaError("doca_ofed_repo_base_url: repomd.xml has no primary metadata")


def parse_primary_xml(xml_text: Any) -> Dict[str, List[str]]:
    """dnf ``primary.xml`` -> {package: ["[epoch:]version-release", ...]}."""
    root = _xml(xml_text, "primary.xml")
    found: Dict[str, List[str]] = {}
    for pkg in root.findall(_COMMON_NS + "package"):
        name = pkg.findtext(_COMMON_NS + "name")
        ver = pkg.find(_COMMON_NS + "version")
        if not name or ver is None:
            continue
        text = "{}-{}".format(ver.get("ver"), ver.get("rel"))
        if ver.get("epoch") not in (None, "", "0"):
            text = "{}:{}".format(ver.get("epoch"), text)
        try:
            _split_version(text)
        except ParseError as exc:
            raise ParseError(f"package {name}: {exc.message}") from None
        found.setdefault(name, []).append(text)
    return {name: sort_versions(versions) for name, versions in found.items()}


# --------------------------------------------------------------------------- installed stack
def parse_ofed_info(text: Any) -> Optional[Dict[str, str]]:
    """``ofed_info -s`` -> {flavour: mlnx_ofed|doca_ofed, version}; None when nothing is recognised."""
    for line in as_text(text or "", "ofed_info output").splitlines():
        line = line.strip().rstrip(":")
        match = re.match(r"^MLNX_OFED_LINUX-(\S+)$", line)
        if match:
            return {"flavour": "mlnx_ofed", "version": match.group(1)}
        match = re.match(r"^OFED-internal-(\S+)$", line)
        if match:
            return {"flavour": "doca_ofed", "version": match.group(1)}
    return None


def ofed_release_from_dkms_version(version: str) -> Optional[str]:
    """'24.10.OFED.24.10.1.1.4.1-1' -> '24.10-1.1.4' (the release ofed_info and mlx5_core report)."""
    match = re.match(r"^(?:\d+:)?[\d.]+\.OFED\.(\d+\.\d+)\.(\d+)\.(\d+)\.(\d+)(?:\.\d+)*(?:-.*)?$", str(version))
    if not match:
        return None
    return "{}-{}.{}.{}".format(*match.groups())


def release_matches(reported: Optional[str], expected: Optional[str]) -> bool:
    """'24.10-1.1.4.0.200' (ofed_info) matches '24.10-1.1.4'; '24.10-1.1.40' does not."""
    if not reported or not expected:
        return False
    return reported == expected or reported.startswith(expected + ".")


def parse_dkms_status(text: Any) -> List[Dict[str, str]]:
    """``dkms status`` lines, dkms 3.x ('m/v, kernel, arch: state') and 2.x ('m, v, kernel, arch: state');
    other lines (dkms errors and warnings) are left out."""
    entries = []
    for line in as_text(text or "", "dkms status output").splitlines():
        line = line.strip()
        if not line or ":" not in line:
            continue
        head, _sep, state = line.rpartition(":")
        state = state.strip()
        parts = [p.strip() for p in head.split(",")]
        if "/" in parts[0]:
            module, _sep, version = parts[0].partition("/")
            rest = parts[1:]
        elif len(parts) >= 2:
            module, version = parts[0], parts[1]
            rest = parts[2:]
        else:
            continue
        if not module.strip() or not version.strip():
            continue
        entries.append(
            {
                "module": module,
                "version": version,
                "kernel": rest[0] if rest else "",
                "arch": rest[1] if len(rest) > 1 else "",
                "state": state.split()[0] if state else "",
            }
        )
    return entries


def detect_stack(ofed_info: Optional[str], packages: Mapping[str, str], modules: Mapping[str, Any]) -> Dict[str, Any]:
    """Which RDMA stack is on the host, installed and loaded.

    ``packages``: installed package -> version. ``modules``: what /sys/module shows:
    ``{"ib_core": bool, "mlx_compat": bool, "mlx5_core": bool, "mlx5_core_version": str|None}``.
    ``mlx_compat`` exists only with MOFED/DOCA-OFED kernel modules, so ib_core without it is the
    inbox stack.
    """
    info = parse_ofed_info(ofed_info)
    doca_meta = sorted(name for name in packages if name in {p[0] for p in PROFILES.values()})
    dkms_version = packages.get("mlnx-ofed-kernel-dkms")
    installed_release = ofed_release_from_dkms_version(dkms_version) if dkms_version else None
    if doca_meta or (info and info["flavour"] == "doca_ofed"):
        kind = "doca_ofed"
    elif (info and info["flavour"] == "mlnx_ofed") or dkms_version:
        kind = "mlnx_ofed"
    elif modules.get("ib_core") or modules.get("mlx5_core"):
        kind = "inbox"
    else:
        kind = "none"
    if modules.get("mlx_compat"):
        loaded = "ofed"
    elif modules.get("ib_core") or modules.get("mlx5_core"):
        loaded = "inbox"
    else:
        loaded = "none"
    return {
        "kind": kind,
        "profiles": doca_meta,
        "ofed_info": info,
        "installed_release": installed_release or (info or {}).get("version"),
        "loaded": loaded,
        "loaded_release": modules.get("mlx5_core_version") if loaded == "ofed" else None,
    }


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
