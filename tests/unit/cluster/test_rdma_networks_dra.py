"""rdma_networks and gpufabric_k8s_device_allocation, run by ansible-playbook on this machine: in `dra`
mode the plan's DeviceClasses and claim templates join the role's objects (applied, access-checked,
pruned, rendered); with the device plugins the role's objects and the permissions it asks for are
what they were before DRA, and the DRA kinds are pruned only where the identity may list them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from intent_support import cluster_plan
from role_runner import REPO, ansible_playbook, run_role_playbook

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _dra

INSTANCE = "lab"
ROLE = REPO / "roles" / "rdma_networks"
DRA_GROUP = "resource.k8s.io"

# The role's own variables evaluated as its tasks see them, one file per case.
VARS_PLAY = """
- name: Evaluate rdma_networks' objects and access rules
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json, {defaults}, {role_vars}]
  tasks:
    - name: Write the objects and rules of each case
      ansible.builtin.copy:
        content: "{{{{ {{'objects': __rdma_networks_objects, 'rules': __rdma_networks_rules,
                      'prune': __rdma_networks_prune_kinds}} | to_json }}}}"
        dest: "{{{{ out }}}}/{{{{ item.name }}}}.json"
        mode: "0644"
      vars:
        gpufabric_plan: "{{{{ item.plan }}}}"
        __rdma_networks_dra_prunable: "{{{{ item.prunable }}}}"
      loop: "{{{{ cases }}}}"
      loop_control:
        label: "{{{{ item.name }}}}"
"""


@pytest.fixture(scope="module")
def plans(dgx_cluster) -> Dict[str, Dict[str, Any]]:
    """gpufabric_plan in each mode for the 8 DGX nodes, every object owned as the plan owns it."""
    network = cluster_plan({"supernet": "10.200.0.0/16"}, dgx_cluster, {"pod": "10.244.0.0/16"}, {"mtu": 9000})
    network["objects"] = {part: _k8s_publish.own(o, part, INSTANCE) for part, o in network["objects"].items()}
    groups = [{"name": g["name"], "nodes": g["nodes"]} for g in network["node_groups"]]
    label = network["config"]["label_prefix"] + "/node-group"
    section = _dra.plan(groups, dgx_cluster, network["config"]["nad_namespace"], label)
    section["objects"] = _k8s_publish.own(section["objects"], "rdma_networks", INSTANCE)
    base = {"network": network, "instance": INSTANCE, "field_conflicts": "fail"}
    return {"dra": dict(base, dra=section), "device_plugin": dict(base, dra=None)}


@pytest.fixture(scope="module")
def evaluated(plans, tmp_path_factory) -> Dict[str, Dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("rdma-vars")
    cases = [
        {"name": "dra", "plan": plans["dra"], "prunable": False},
        {"name": "device_plugin", "plan": plans["device_plugin"], "prunable": False},
        {"name": "device_plugin_prunable", "plan": plans["device_plugin"], "prunable": True},
    ]
    (tmp / "vars.json").write_text(json.dumps({"cases": cases, "out": str(tmp)}))
    (tmp / "play.yml").write_text(
        VARS_PLAY.format(defaults=ROLE / "defaults" / "main.yml", role_vars=ROLE / "vars" / "main.yml")
    )
    env = {"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")}
    done = ansible_playbook(
        tmp, "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", str(tmp / "play.yml"), env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return {c["name"]: json.loads((tmp / f"{c['name']}.json").read_text()) for c in cases}


def _dra_rules(rules):
    return [r for r in rules if r.get("api_group") == DRA_GROUP]


def test_dra_mode_applies_the_classes_and_templates_with_the_rails_objects(plans, evaluated):
    rails = plans["dra"]["network"]["objects"]["rdma_networks"]
    section = plans["dra"]["dra"]["objects"]
    assert evaluated["dra"]["objects"] == rails + section
    assert [o["kind"] for o in section].count("DeviceClass") == 2
    namespace = plans["dra"]["network"]["config"]["nad_namespace"]
    rules = {
        (r["resources"][0], r.get("namespace", ""), tuple(r["verbs"])) for r in _dra_rules(evaluated["dra"]["rules"])
    }
    assert rules == {
        ("deviceclasses", "", tuple(_k8s_access.APPLY_VERBS)),
        ("resourceclaimtemplates", namespace, tuple(_k8s_access.APPLY_VERBS)),
        ("deviceclasses", "", ("list", "delete")),
        ("resourceclaimtemplates", namespace, ("list", "delete")),
    }
    kinds = [k for k in evaluated["dra"]["prune"] if k.get("api_group") == DRA_GROUP]
    assert kinds == [
        {"api_group": DRA_GROUP, "version": "v1", "resources": ["deviceclasses"]},
        {"api_group": DRA_GROUP, "version": "v1", "resources": ["resourceclaimtemplates"], "namespace": namespace},
    ]


def test_device_plugin_mode_applies_and_asks_for_what_it_did_before(plans, evaluated):
    """The objects are the rails' alone, and no permission on a DRA kind is asked for: the rules are
    the role's table, its objects' apply rules and its rails' prune kinds, as before DRA."""
    case = evaluated["device_plugin"]
    assert case["objects"] == plans["device_plugin"]["network"]["objects"]["rdma_networks"]
    assert _dra_rules(case["rules"]) == []
    assert all(k.get("api_group") != DRA_GROUP for k in case["prune"])
    table = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__rdma_networks_access"]
    namespace = plans["device_plugin"]["network"]["config"]["nad_namespace"]
    before = [
        *table["crds_wait"],
        *table["namespaces"],
        *table["label_nodes"],
        *_k8s_access.apply_rules(case["objects"]),
        *_k8s_publish.prune_rules(
            yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__rdma_networks_prune"]
            + [{"api_group": "", "version": "v1", "resources": ["configmaps"], "namespace": namespace}]
        ),
    ]
    assert _k8s_access.expand(case["rules"]) == _k8s_access.expand(before)


def test_device_plugin_mode_prunes_the_dra_kinds_where_the_identity_may_list_them(evaluated):
    case = evaluated["device_plugin_prunable"]
    rules = _dra_rules(case["rules"])
    assert [(r["resources"], r["verbs"]) for r in rules] == [
        (["deviceclasses"], ["list", "delete"]),
        (["resourceclaimtemplates"], ["list", "delete"]),
    ]


def _files(path: Path) -> Dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_render_mode_writes_the_dra_objects_and_a_return_to_device_plugin_removes_them(plans, tmp_path):
    render = tmp_path / "render"

    def run(name, mode):
        plan = dict(plans[mode], k8s_mode="render")
        variables = {"gpufabric_plan": plan, "gpufabric_k8s_render_dir": str(render)}
        done = run_role_playbook(tmp_path / name, "gpufabric.rollout.rdma_networks", variables)
        assert done["rc"] == 0, done["out"]
        return done, _files(render / "rdma_networks")

    _done, dra_files = run("dra", "dra")
    listed = yaml.safe_load(dra_files["kustomization.yaml"])["resources"]
    for obj in plans["dra"]["dra"]["objects"]:
        meta = obj["metadata"]
        name = "-".join(p for p in (obj["kind"].lower(), meta.get("namespace"), meta["name"]) if p) + ".yaml"
        assert name in listed, (name, listed)
        assert yaml.safe_load(dra_files[name]) == obj
    again, _same = run("again", "dra")
    assert again["changed"] == 0, again["out"]

    _done, plugin_files = run("device_plugin", "device_plugin")
    dra_names = {n for n in dra_files if n.startswith(("deviceclass-", "resourceclaimtemplate-"))}
    assert len(dra_names) == len(plans["dra"]["dra"]["objects"])
    assert set(plugin_files) == set(dra_files) - dra_names
    assert yaml.safe_load(plugin_files["kustomization.yaml"])["resources"] == [n for n in listed if n not in dra_names]
