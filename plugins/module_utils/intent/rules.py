# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ranges and rules across fields of the collection's variables, run after ``_intent.check``.

Argument specs give types, choices and defaults; what they cannot say lives here, once: ranges,
formats (CIDRs, DNS names, versions) and rules that tie two values together (the ToS byte and
the DSCP, the CNP priority and the lossless priority, render mode and its directory, ...). Every
function takes the normalised values (defaults filled) and returns problems, each naming the
variable path, the value and what is allowed. Rules that need discovered hardware (a NIC named
in ``roce_interfaces`` must exist) are the planner's, not these.

The rules live by subject in ``intent.network_rules`` (fabric, rails, Kubernetes networks, RoCE,
GPUDirect), ``intent.software_rules`` (DOCA, signing keys, NCCL, GPU driver, charts, GPU Operator),
``intent.operation_rules`` (validation, batches, instance, upgrade), ``intent.switch_rules`` (the
leaves) and ``intent.storage``; this
module lists which run for each scope.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import storage as _storage_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.network_rules import (
    fabric_rules,
    gpudirect_rules,
    k8s_rules,
    node_scalar_rules,
    rails_rules,
    roce_rules,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.operation_rules import (
    batch_rules,
    instance_rules,
    upgrade_rules,
    validate_rules,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.software_rules import (
    chart_rules,
    doca_rules,
    gpu_driver_rules,
    gpu_operator_rules,
    nccl_config_rules,
    signing_key_rules,
    topology_rules,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.switch_rules import switches_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import Problems

Rule = Callable[[Mapping[str, Any], Problems], None]
GivenRule = Callable[[Mapping[str, Any], Mapping[str, Any], Problems], None]


NODE_RULES: Sequence[Rule] = (
    fabric_rules,
    node_scalar_rules,
    batch_rules,
    _storage_rules.storage_rules,
    roce_rules,
    gpudirect_rules,
    doca_rules,
    nccl_config_rules,
    signing_key_rules,
    topology_rules,
    gpu_driver_rules,
    validate_rules,
)
# Rules about the variables as given (see intent.check.check_scope's given_rules).
NODE_GIVEN_RULES: Sequence[GivenRule] = (_storage_rules.storage_given_rules,)
CLUSTER_RULES: Sequence[Rule] = (
    rails_rules,
    switches_rules,
    k8s_rules,
    chart_rules,
    gpu_operator_rules,
    _storage_rules.storage_csi_rules,
    instance_rules,
)
UPGRADE_RULES: Sequence[Rule] = (upgrade_rules,)


def problems_of(values: Mapping[str, Any], rules: Sequence[Rule]) -> Problems:
    problems: Problems = []
    for rule in rules:
        rule(values, problems)
    return problems
