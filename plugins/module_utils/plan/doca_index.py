# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DOCA-OFED repository indexes and package versions: dpkg version order, the version a pin selects,
apt ``Packages`` stanzas and dependencies, dnf ``repomd.xml``/``primary.xml`` (plan/doca.py and the
``doca_repo_info`` module use them). The parsers raise ParseError naming the line of a malformed
document or version; ``DocaError`` is bad intent or unusable input, naming the variable.

Pure functions, no Ansible imports.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, as_text, integer


class DocaError(ValueError):
    """Bad intent or unusable input; the message names the variable."""


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
