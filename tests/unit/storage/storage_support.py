"""Helpers of the storage tests: the lab's storage intent (molecule/storage/group_vars), checked with the
collection's argument specs like the plan play checks it, and the node facts of the plan tests."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any, Dict

import yaml

HERE = Path(__file__).resolve().parent
UNIT = HERE.parent
REPO = UNIT.parents[1]
STORAGE_INTENT = REPO / "molecule" / "storage" / "group_vars" / "gpu_nodes" / "storage.yml"
CRDS = HERE / "fixtures" / "crds"


def _plan_conftest():
    """tests/unit/plan/conftest.py (the lab intent, the node facts and the checker), loaded by path."""
    spec = importlib.util.spec_from_file_location("plan_conftest_for_storage", UNIT / "plan" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLAN = _plan_conftest()


def storage_intent() -> Dict[str, Any]:
    """The storage scenario's intent, its BeeGFS filesystem left out: these tests' expectations are built
    on the other five backends; BeeGFS has its own (test_beegfs.py, test_lab_beegfs.py), and the
    scenario carries all six on the lab nodes."""
    intent = yaml.safe_load(STORAGE_INTENT.read_text())
    intent["gpufabric_storage"] = [fs for fs in intent["gpufabric_storage"] if fs["backend"] != "beegfs"]
    for key in [k for k in intent if k.startswith("storage_client_beegfs_")]:
        del intent[key]
    for key in [k for k in intent if k.endswith("_key_fingerprints")]:
        intent[key] = [PLAN.LAB_KEY_FINGERPRINT]  # the lab's throwaway key, made by `make repo`
    return intent


def lab_variables(**changes) -> Dict[str, Any]:
    variables = PLAN.lab_intent()
    variables.update(copy.deepcopy(storage_intent()))
    variables.update(changes)
    return variables


def node_facts(node: int = 1) -> Dict[str, Any]:
    facts = PLAN.node_facts(node)
    # The DOCA index fixture predates the storage components; the lab repository carries them
    # (lab/repo/packages.yml), so plan without the index (the repository is read on the node).
    facts["doca_index"] = None
    return facts


CSI_VARS = {
    "storage_csi_drivers": {
        "lustre": {"chart_path": "/opt/lustre-csi-driver/charts/lustre-csi-driver"},
        "gpfs": {"manifest": "/opt/ibm-spectrum-scale-csi/generated/installer/ibm-spectrum-scale-csi-operator.yaml"},
        "nvmeof": {
            "manifest": "/opt/csi-driver-nvmf/deploy/kubernetes",
            "image": "registry.example.com/nvmfplugin:1.0",
        },
    }
}


def cluster_plan(check, cluster_changes=None, node_changes=None) -> Dict[str, Any]:
    """The cluster plan of two lab nodes with the lab's storage intent (and CSI_VARS, and the changes)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        values, problems = check("node", lab_variables(gpufabric_k8s_node_name=name, **(node_changes or {})))
        assert problems == []
        plan = _plan_node.plan_node(values, node_facts(index))
        records[name] = _node_records.node_record(plan, node_facts(index)["topology"])
    variables = lab_variables(**{**CSI_VARS, **(cluster_changes or {})})
    values, problems = check("cluster", variables)
    assert problems == []
    return _plan_cluster.plan(values, records)
