"""Fixtures for the plan tests: the collection's argument specs, a valid lab intent, and the facts
the plan play reads from a node (built from the discovery fixtures of tests/unit/cluster and the
DOCA repository fixture of tests/unit/doca; see README.md beside this file)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.action.plan import (
    IGNORED_PREFIXES,
    RUNTIME_NAMES,
    load_internal_vars,
    load_specs,
    trusted,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as _intent
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import rules as _intent_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index

HERE = Path(__file__).resolve().parent
UNIT = HERE.parent
REPO = UNIT.parents[1]
NODE_ROLES = [
    "topology",
    "doca_ofed",
    "gpu_driver",
    "roce",
    "gpudirect_rdma",
    "gpudirect_storage",
    "storage_client",
    "nccl_config",
    "validate",
]
CLUSTER_ROLES = ["network_operator", "gpu_operator", "rdma_networks", "sriov_networks", "storage_csi"]


LAB_KEY_FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"


def lab_intent() -> Dict[str, Any]:
    """The lab inventory's group_vars: a valid intent, the base every bad-input case changes."""
    out: Dict[str, Any] = {}
    for path in sorted((REPO / "inventory" / "lab" / "group_vars").glob("*/*.yml")):
        out.update(yaml.safe_load(path.read_text()) or {})
    # Values that are Jinja expressions relative to the inventory: the checkout's paths (the plan
    # reads a local chart's Chart.yaml), or plain paths.
    for key, value in list(out.items()):
        if isinstance(value, str) and value.startswith("{{ inventory_dir }}/../../"):
            out[key] = str(REPO / value[len("{{ inventory_dir }}/../../") :])
        elif key.endswith("_key_fingerprints"):
            # The lab's throwaway repository key, made by `make repo`: a stand-in fingerprint here.
            out[key] = [LAB_KEY_FINGERPRINT]
        elif isinstance(value, str) and "{{" in value:
            out[key] = "/lab/" + key
    # The lab's leaves face the lab inventory's nodes; the tests that plan other nodes start without
    # them (lab_switches() gives them, for the tests of the switch plan).
    out.pop("gpufabric_switches", None)
    # The cluster check refuses a kubeconfig that does not exist on the controller: without a
    # running lab, the intent names a stand-in (never read by the unit tests).
    if not Path(out.get("gpufabric_kubeconfig") or "").is_file():
        out["gpufabric_kubeconfig"] = str(HERE / "cases" / "kubeconfig")
    return out


def lab_switches() -> Dict[str, Any]:
    """The lab inventory's gpufabric_switches, "{{ groups['gpu_nodes'] }}" rendered as Ansible renders it
    for inventory/lab (its GPU nodes in inventory order)."""
    lab = REPO / "inventory" / "lab"
    intent = copy.deepcopy(yaml.safe_load((lab / "group_vars" / "all" / "switches.yml").read_text()))
    nodes = list(yaml.safe_load((lab / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"])
    for leaf in intent["gpufabric_switches"]["leaves"]:
        for rail in leaf["rails"]:
            assert rail["nodes"] == "{{ groups['gpu_nodes'] }}", rail
            rail["nodes"] = list(nodes)
    return intent["gpufabric_switches"]


@pytest.fixture(scope="session")
def specs():
    return load_specs(str(REPO))


def render_default(text: str, known: Dict[str, Any]) -> Any:
    """Render a spec default the way the plan action does (Ansible's templar, the checked values known)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    variables = {"inventory_hostname": "gpu-node-01", "inventory_dir": "/inv", "playbook_dir": "/pb", "groups": {}}
    variables["ansible_inventory_sources"] = ["/inv/hosts.yml"]
    variables["ansible_facts"] = {"default_ipv4": {"interface": "eth0"}}
    variables.update(load_internal_vars(NODE_ROLES + CLUSTER_ROLES, str(REPO)))
    variables.update(known)
    return Templar(loader=DataLoader(), variables=trusted(variables)).template(trust_as_template(text))


def check(specs, scope: str, variables: Dict[str, Any]):
    entry = {"node": "node_intent", "cluster": "cluster_intent", "upgrade": "upgrade"}[scope]
    roles = {"node": NODE_ROLES, "cluster": CLUSTER_ROLES, "upgrade": []}[scope]
    rules = {
        "node": _intent_rules.NODE_RULES,
        "cluster": _intent_rules.CLUSTER_RULES,
        "upgrade": _intent_rules.UPGRADE_RULES,
    }[scope]
    given_rules = _intent_rules.NODE_GIVEN_RULES if scope == "node" else ()
    return _intent.check_scope(
        specs,
        entry,
        roles,
        variables,
        rules,
        render_default,
        "plan",
        RUNTIME_NAMES,
        IGNORED_PREFIXES,
        given_rules=given_rules,
    )


@pytest.fixture()
def intent():
    return copy.deepcopy(lab_intent())


def node_facts(node: int = 1, **overrides) -> Dict[str, Any]:
    topology = json.loads((UNIT / "cluster" / "fixtures" / "topology" / f"dgx-h200-8x8.node{node}.json").read_text())
    packages = (UNIT / "doca" / "fixtures" / "Packages").read_text()
    facts = {
        "ansible": {
            "distribution": "Debian",
            "distribution_version": "12.11",
            "distribution_major_version": "12",
            "os_family": "Debian",
            "architecture": "x86_64",
            "kernel": "6.1.0-28-amd64",
            "service_mgr": "systemd",
            "processor_vcpus": 224,
            "memtotal_mb": 2063000,
        },
        "topology": topology,
        "gpudirect": {
            "driver_flavour": "open",
            "driver_version": "580.95.05",
            "kernel_release": "6.1.0-28-amd64",
            "cuda_version": "13.0",
            "gpus": [{"model": g.get("model"), "compute_cap": "9.0"} for g in topology["gpus"]],
            "mofed": False,
            "peermem_available": True,
        },
        "doca": {"kind": "inbox"},
        "doca_index": {
            "packages": _doca_index.parse_packages_index(packages),
            "depends": _doca_index.parse_packages_depends(packages),
        },
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(facts.get(key), dict):
            facts[key].update(value)
        else:
            facts[key] = value
    return facts
