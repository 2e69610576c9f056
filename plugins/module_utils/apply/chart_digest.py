# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A chart pulled from an OCI repository, checked against the manifest digest the user pinned.

For a chart without provenance (dranet publishes none) the pin is the OCI manifest digest its
release published. ``helm pull oci://...`` reports the manifest it fetched ("Pulled: REF" and
"Digest: sha256:...", Helm 3.8 and later, pkg/registry/client.go), and the registry client checks
every blob it fetches against the digest the manifest names, so the manifest digest fixes the
chart archive. A pull that reports another digest, or none, is refused before the chart is
installed or shipped.

Pure, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Optional

_DIGEST_LINE = re.compile(r"^Digest:\s*(sha256:[0-9a-f]{64})\s*$", re.M)


def pulled_digest(output: str) -> Optional[str]:
    """The manifest digest ``helm pull`` reported in ``output`` (its stdout and stderr); None without one."""
    found = _DIGEST_LINE.findall(output or "")
    return found[-1] if found else None


def refusal(output: str, pinned: str, ref: str, version: str, variable: str) -> str:
    """Why the pulled chart is refused, naming the pin's variable; '' when its digest is the pinned one."""
    found = pulled_digest(output)
    if found == pinned:
        return ""
    if found is None:
        return (
            f"helm pull {ref} --version {version} reported no manifest digest, so the chart cannot be checked "
            f"against {variable} ({pinned}); nothing was installed"
        )
    return (
        f"{ref}:{version} has manifest digest {found}, but {variable} pins {pinned}: the repository serves another "
        f"chart than the one pinned (a re-pushed tag, or a mirror that rewrote it); nothing was installed. Check "
        f"the release's published digest, then set {variable} or the chart's version"
    )
