# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version skew between the layers: the rules of ``roles/plan/files/version_skew.yml``, applied.

Two questions are answered here, both before anything changes:

- ``target_set``: do the versions the intent asks for fit together (the GPU Operator release and
  the GPU drivers of the nodes, the GPU Operator and Network Operator releases)? Every plan asks it.
- ``upgrade_path``: may a release move from what the cluster runs to the target in one step (the
  operators support upgrades within a major release or to the next one)? The upgrade asks it.

Each answer is a list of refusals (``problems``, the plan stops) and a list of ``notes`` (rules that
only warn, and versions the tables do not know, which are said to be unchecked rather than judged).
The rules' data is validated by ``load``; nothing here reads files or imports Ansible.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

COMPONENTS = ("gpu_operator", "network_operator")
HOST_LAYERS = ("doca_ofed", "gpu_driver", "nvidia_peermem", "nvidia_fs", "qos", "validation")
CLUSTER_LAYERS = ("network_operator", "gpu_operator")
NAMES = {"gpu_operator": "GPU Operator", "network_operator": "Network Operator"}
_RELEASE_RE = re.compile(r"^v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
_BRANCH_RE = re.compile(r"^([0-9]{3})\.")


class SkewError(ValueError):
    """The rules file is malformed."""


def major(version: Any) -> Optional[str]:
    """The major release (YY.MM) of an operator version such as v26.7.0 or 25.10.1."""
    match = _RELEASE_RE.match(str(version or "").strip())
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def branch(driver_version: Any) -> Optional[int]:
    """The branch of an NVIDIA driver version: 580 for 580.95.05."""
    match = _BRANCH_RE.match(str(driver_version or "").strip())
    return int(match.group(1)) if match else None


def _short(hosts: Sequence[str], limit: int = 4) -> str:
    hosts = list(hosts)
    return (
        ", ".join(hosts)
        if len(hosts) <= limit
        else "{} and {} more".format(", ".join(hosts[:limit]), len(hosts) - limit)
    )


def load(data: Any) -> Dict[str, Any]:
    """Check the structure of the rules (the YAML document, parsed) and return it."""
    if not isinstance(data, Mapping):
        raise SkewError("version_skew.yml: the document is not a mapping")
    order = data.get("order") or {}
    host = [item.get("layer") for item in order.get("host") or [] if isinstance(item, Mapping)]
    cluster = [item.get("layer") for item in order.get("cluster") or [] if isinstance(item, Mapping)]
    if tuple(host) != HOST_LAYERS or tuple(cluster) != CLUSTER_LAYERS:
        raise SkewError(
            f"version_skew.yml: order.host must list {', '.join(HOST_LAYERS)} and order.cluster "
            f"{', '.join(CLUSTER_LAYERS)}, each with a reason; found {host} and {cluster}"
        )
    for item in list(order.get("host") or []) + list(order.get("cluster") or []):
        if not str(item.get("why") or "").strip():
            raise SkewError(f"version_skew.yml: order entry {item.get('layer')} has no reason (why)")
    for component in COMPONENTS:
        section = data.get(component)
        if not isinstance(section, Mapping) or not str(section.get("source") or "").strip():
            raise SkewError(f"version_skew.yml: {component} needs a source")
        majors = section.get("majors")
        if not isinstance(majors, list) or not majors or any(major(m) != str(m) for m in majors):
            raise SkewError(f"version_skew.yml: {component}.majors must list YY.MM releases in order")
        ordered = sorted(majors, key=lambda m: tuple(int(x) for x in str(m).split(".")))
        if ordered != majors or len(set(majors)) != len(majors):
            raise SkewError(f"version_skew.yml: {component}.majors is not in release order without repeats")
    gpu = data["gpu_operator"]
    for key in ("driver_branches", "network_operators_validated"):
        table = gpu.get(key)
        if not isinstance(table, Mapping):
            raise SkewError(f"version_skew.yml: gpu_operator.{key} must be a mapping by major release")
        for release, listed in table.items():
            if str(release) not in gpu["majors"] or not isinstance(listed, list) or not listed:
                raise SkewError(f"version_skew.yml: gpu_operator.{key}.{release}: unknown major or empty list")
    for release, branches in gpu["driver_branches"].items():
        if any(not isinstance(b, int) or isinstance(b, bool) for b in branches):
            raise SkewError(f"version_skew.yml: gpu_operator.driver_branches.{release}: branches are integers")
    for release, networks in gpu["network_operators_validated"].items():
        unknown = [n for n in networks if str(n) not in data["network_operator"]["majors"]]
        if unknown:
            raise SkewError(
                f"version_skew.yml: gpu_operator.network_operators_validated.{release}: {unknown} are not "
                "network_operator.majors"
            )
    return dict(data)


def layer_order(rules: Mapping[str, Any]) -> Dict[str, List[Dict[str, str]]]:
    """The order of the host and the cluster layers, each with its reason."""
    return {
        part: [
            {"layer": str(item["layer"]), "why": " ".join(str(item["why"]).split())} for item in rules["order"][part]
        ]
        for part in ("host", "cluster")
    }


# --------------------------------------------------------------------------------------------- paths
def upgrade_path(
    component: str, variable: str, current: Any, target: Any, rules: Mapping[str, Any]
) -> Tuple[List[str], List[str]]:
    """May ``component`` move from ``current`` to ``target`` in one step? (problems, notes)."""
    name = NAMES[component]
    majors = list(rules[component]["majors"])
    if not current or not target:
        return [], []
    cur, tgt = major(current), major(target)
    if cur is None or tgt is None or cur not in majors or tgt not in majors:
        unknown = ", ".join(str(v) for v, m in ((current, cur), (target, tgt)) if m not in majors)
        return [], [
            f"{variable}: {name} {unknown} is not in the skew table; "
            f"the upgrade path {current} -> {target} is not checked"
        ]
    step = majors.index(tgt) - majors.index(cur)
    if step > 1:
        skipped = majors[majors.index(cur) + 1 : majors.index(tgt)]
        following = majors[majors.index(cur) + 1]
        return [
            f"{variable}: {target}, but the cluster runs {name} {current}; {name} upgrades are supported within a "
            f"major release or to the next one, and this skips {', '.join(skipped)}: upgrade to a {following}.x "
            f"release first"
        ], []
    if step < 0:
        return [], [
            f"{variable}: {target} is older than the {name} {current} the cluster runs; a downgrade across major "
            "releases is not a documented path"
        ]
    return [], []


# --------------------------------------------------------------------------------------------- target set
def _drivers(records: Mapping[str, Mapping[str, Any]]) -> Dict[Tuple[str, str], List[str]]:
    """(driver version, managed_by) -> hosts, from the nodes' records."""
    out: Dict[Tuple[str, str], List[str]] = {}
    for host in sorted(records):
        driver = ((records[host] or {}).get("gpu") or {}).get("driver") or {}
        if driver.get("version"):
            out.setdefault((str(driver["version"]), str(driver.get("managed_by") or "host")), []).append(host)
    return out


def target_set(
    values: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]], rules: Mapping[str, Any]
) -> Tuple[List[str], List[str]]:
    """Do the target versions fit together? (problems, notes)."""
    problems: List[str] = []
    notes: List[str] = []
    gpu_rules = rules["gpu_operator"]
    gpu_chart = values.get("gpu_operator_chart_version") if values.get("gpu_operator_install_chart", True) else None
    net_chart = (
        values.get("network_operator_chart_version") if values.get("network_operator_install_chart", True) else None
    )
    gpu_major = major(gpu_chart) if gpu_chart else None
    if gpu_chart and gpu_major not in gpu_rules["driver_branches"]:
        notes.append(
            f"gpu_operator_chart_version: {gpu_chart} is not in the skew table; its GPU drivers are not checked"
        )
    elif gpu_chart:
        listed = list(gpu_rules["driver_branches"][gpu_major])
        for (version, managed_by), hosts in _drivers(records).items():
            found = branch(version)
            if found in listed:
                continue
            text = (
                f"driver {version} (branch {found}) on {_short(hosts)}, but the GPU Operator {gpu_chart} component "
                f"matrix lists the branches {', '.join(str(b) for b in listed)}"
            )
            if managed_by == "operator":
                problems.append(
                    f"gpufabric_gpu_driver.version: {text}; the operator deploys those driver containers: pick a "
                    "driver of one of them, or another gpu_operator_chart_version"
                )
            else:
                notes.append(f"gpufabric_gpu_driver: {text} (a host driver outside the matrix is not validated)")
    if gpu_chart and net_chart and gpu_major in gpu_rules["network_operators_validated"]:
        validated = [str(v) for v in gpu_rules["network_operators_validated"][gpu_major]]
        if major(net_chart) not in validated:
            notes.append(
                f"network_operator_chart_version: {net_chart} is not among the Network Operator releases the GPU "
                f"Operator {gpu_chart} documentation validates with GPUDirect RDMA ({', '.join(validated)})"
            )
    return problems, notes
