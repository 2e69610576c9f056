# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to patch so that every Node carries the labels the plan wants (Python >= 3.8).

Pure functions of the Nodes as read and the plan: the node_labels module reads and writes.
``owned`` lists the label keys the caller owns: an entry ending in ``*`` is a key prefix
(``gpufabric.io/fs-*``), any other entry is one key. The keys wanted are owned too. An owned key a
planned Node carries but the plan no longer wants is removed; labels the caller does not own are
never touched.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

# Kubernetes label syntax (the API documentation's "Labels and Selectors" page): an optional DNS
# subdomain prefix of at most 253 characters and "/", then a name of at most 63 characters; values
# at most 63 characters, empty or alphanumeric at both ends, with "-", "_" and "." inside.
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")

# A Node name is a DNS subdomain (lower case, at most 253 characters); it goes into a request path.
_NODE = re.compile(rf"^{_PREFIX}$")

Patch = Dict[str, Optional[str]]


def owns(key: str, owned: Iterable[str]) -> bool:
    for entry in owned:
        if entry.endswith("*") and key.startswith(entry[:-1]):
            return True
        if key == entry:
            return True
    return False


def problems(wanted: Mapping[str, Mapping[str, str]], owned: Iterable[str]) -> List[str]:
    """What is wrong with the variables, each naming the variable and what is allowed."""
    out = []
    for entry in owned:
        key = entry[:-1].rstrip("/-_.") if entry.endswith("*") else entry
        if not key or not _KEY.match(key):
            out.append(f"owned: {entry!r} is not a label key or a key prefix ending in '*'")
    for node, labels in sorted(wanted.items()):
        if not isinstance(node, str) or len(node) > 253 or not _NODE.match(node):
            out.append(
                f"labels: {node!r} is not a Node name (a DNS subdomain: lower case, '-' and '.', <= 253 characters)"
            )
            continue
        if not isinstance(labels, Mapping):
            out.append(f"labels[{node!r}]: must be a dict of label key to value")
            continue
        for key, value in sorted(labels.items()):
            if not _KEY.match(str(key)) or len(str(key).split("/", maxsplit=1)[0]) > 253:
                out.append(f"labels[{node!r}]: {key!r} is not a valid label key ([prefix/]name, name <= 63 characters)")
            if not isinstance(value, str) or not _VALUE.match(value):
                out.append(
                    f"labels[{node!r}][{key!r}]: {value!r} is not a valid label value "
                    "(a string of at most 63 characters, "
                    "alphanumeric at both ends, '-', '_' and '.' inside)"
                )
    return out


def changes(
    current: Mapping[str, Mapping[str, str]],
    wanted: Mapping[str, Mapping[str, str]],
    owned: Iterable[str],
    prune_unplanned: bool = False,
) -> Tuple[Dict[str, Patch], List[str]]:
    """({Node: merge patch of metadata.labels} for the Nodes that differ, planned Nodes missing).

    ``current`` is {Node name: labels} as read. A patch maps a key to its new value, or to None to
    remove it. Nodes outside the plan lose their owned labels only with ``prune_unplanned``."""
    owned = list(owned)
    missing = sorted(node for node in wanted if node not in current)
    patches: Dict[str, Patch] = {}
    for node, labels in current.items():
        labels = labels or {}
        if node in wanted:
            want = wanted[node]
        elif prune_unplanned:
            want = {}
        else:
            continue
        patch: Patch = {k: v for k, v in want.items() if labels.get(k) != v}
        for key in labels:
            if key not in want and owns(key, owned):
                patch[key] = None
        if patch:
            patches[node] = dict(sorted(patch.items()))
    return patches, missing


def after(labels: Mapping[str, str], patch: Patch) -> Dict[str, str]:
    """The labels once ``patch`` is applied (for the diff)."""
    out = dict(labels)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return dict(sorted(out.items()))
