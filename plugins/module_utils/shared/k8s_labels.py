# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes label value rule and the gpufabric_instance label, for the intent check (which
refuses a bad instance before anything runs) and the publish path (which labels with it).

A label value is at most 63 characters: letters, digits, '-', '_' and '.', beginning and ending
with a letter or digit (Kubernetes "Labels and Selectors", syntax and character set).
"""

from __future__ import annotations

import re
from typing import Any, Optional

LABEL_VALUE_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def instance_problem(instance: Any) -> Optional[str]:
    """What is wrong with ``instance`` as gpufabric_instance, or None when it is a usable label value."""
    if isinstance(instance, str) and LABEL_VALUE_RE.match(instance):
        return None
    return (
        f"gpufabric_instance: {instance!r} is not a label value (1-63 letters, digits, '-', '_' or '.', "
        "beginning and ending with a letter or digit); every object this collection owns carries it and "
        "pruning selects on it"
    )
