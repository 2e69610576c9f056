"""Planner inputs for unit tests, normalised the way the plan normalises them.

The pure planners (_qos_plan, _nccl, _cluster_plan) take the variables after the plan's check: every
default filled in from the argument specs, the ToS byte resolved. Tests build their inputs here
from a few overrides, so the defaults come from the one place that defines them
(roles/*/meta/argument_specs.yml) and a test never plans from values the plan would refuse.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as _intent
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import rules as _intent_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import networks as _cluster_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import roce as _qos_plan

REPO = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def _spec() -> Dict[str, Any]:
    specs = load_specs(str(REPO))
    spec: Dict[str, Any] = {}
    for role in ("roce", "nccl_config"):
        spec.update(specs[role]["main"])
    for entry in ("node_intent", "cluster_intent"):
        spec.update(specs["plan"][entry])
    return spec


def checked(values: Mapping[str, Any], rules=()) -> Dict[str, Any]:
    """``values`` checked against the specs (and ``rules``), with the defaults of those variables filled."""
    spec = _spec()
    unknown = sorted(set(values) - set(spec))
    assert not unknown, f"not in the specs: {unknown}"
    out, problems = _intent.check({name: spec[name] for name in values}, values)
    for rule in rules:
        rule(out, problems)
    assert not problems, problems
    return out


def fabric(**overrides: Any) -> Dict[str, Any]:
    """gpufabric_fabric as the plan hands it to the planners (defaults filled, roce_tos resolved)."""
    values = checked({"gpufabric_fabric": overrides}, [_intent_rules.fabric_rules])
    return _plan_node.fabric_of(values)


def roce_options(**overrides: Any) -> Dict[str, Any]:
    """The roce role's options in the QoS planner's shape (keys of _plan_node.ROCE_OPTIONS)."""
    names = dict(_plan_node.ROCE_OPTIONS)
    unknown = sorted(set(overrides) - set(names))
    assert not unknown, f"not roce options: {unknown}"
    values = checked({var: overrides.get(key) for key, var in names.items()})
    return {key: values[var] for key, var in names.items()}


def roce_plan(
    topology: Mapping[str, Any],
    fabric_overrides: Optional[Mapping[str, Any]] = None,
    sysroot: str = "/",
    **options: Any,
) -> Dict[str, Any]:
    """The per-NIC QoS plan from a few overrides of the fabric and roce_* defaults."""
    return _qos_plan.build_plan(
        fabric(**dict(fabric_overrides or {})), roce_options(**options), dict(topology), sysroot=sysroot
    )


def rails(**overrides: Any) -> Dict[str, Any]:
    """gpufabric_rails with every default filled in, as the cluster planner takes it."""
    return checked({"gpufabric_rails": overrides})["gpufabric_rails"]


def cluster_plan(
    intent: Mapping[str, Any],
    nodes: Mapping[str, Any],
    cidrs: Optional[Mapping[str, Any]] = None,
    fabric_overrides: Optional[Mapping[str, Any]] = None,
    nccl_version: str = "2.27.3",
    components: Optional[Mapping[str, Any]] = None,
    network_operator_version: Optional[str] = None,
) -> Dict[str, Any]:
    """The cluster networking plan from a few overrides of the gpufabric_rails and fabric defaults
    (the Network Operator objects for ``network_operator_version``, default the newest supported)."""
    return _cluster_plan.plan_cluster(
        rails(**dict(intent)),
        dict(nodes),
        dict(cidrs or {}),
        fabric(**dict(fabric_overrides or {})),
        nccl_version,
        dict(components or {}),
        network_operator_version,
    )
