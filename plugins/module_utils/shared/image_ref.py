# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container image references, checked whole (``fullmatch``) before they reach a Pod spec.

The grammar is the one the container registries' reference library defines
(github.com/distribution/reference, ``reference.go``): ``[domain[:port]/]path[:tag][@digest]``,
path components lower case alphanumerics joined by ``.``, ``_``, ``__`` or dashes, a tag of at
most 128 word characters, dots and dashes (not starting with either), and a digest
``algorithm:hex``; for ``sha256`` the hex part is exactly 64 lower-case digits (OCI image spec,
"Digests"). A reference with a digest runs exactly that image, whatever the tag says later.
"""

from __future__ import annotations

import re
from typing import Optional

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}"
REFERENCE = re.compile(rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::{_TAG})?(?:@(?:{_DIGEST}))?")
MAX_NAME = 255  # the reference library's NameTotalLengthMax


def problem(name: str, value: object) -> Optional[str]:
    """Why ``value`` is not an image reference (the message names ``name``), or None."""
    if not isinstance(value, str) or not value:
        return f"{name}: {value!r} is not an image reference; give [registry/]path[:tag][@sha256:<64 hex digits>]"
    named = value.split("@", 1)[0]
    if ":" in named.rsplit("/", 1)[-1]:
        named = named.rsplit(":", 1)[0]
    if not REFERENCE.fullmatch(value) or len(named) > MAX_NAME:
        return (
            f"{name}: {value!r} is not an image reference; give [registry/]path[:tag][@sha256:<64 hex digits>]"
            " (lower-case path, a tag of word characters, dots and dashes, a full digest)"
        )
    return None
