"""The rolling upgrade's pure core (_upgrade.py): what each node changes, the batches, the stop
rule and the plan the upgrade prints and runs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible.executor.playbook_executor import PlaybookExecutor

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade

REPO = Path(__file__).resolve().parents[3]
RULES = _skew.load(yaml.safe_load((REPO / "roles" / "plan" / "files" / "version_skew.yml").read_text()))


# --------------------------------------------------------------------------------------------- batches
class _Inventory:
    def __init__(self, hosts):
        self.hosts = hosts

    def get_hosts(self, pattern, order=None):
        return list(self.hosts)


class _Play:
    hosts = "gpufabric_upgrade_pending"
    order = "sorted"

    def __init__(self, serial):
        self.serial = serial


def ansible_batches(hosts, serial):
    """The batches ansible-core itself cuts for a play with this serial (PlaybookExecutor)."""
    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = _Inventory(sorted(hosts))
    return executor._get_serialized_batches(_Play(serial if isinstance(serial, list) else [serial]))


@pytest.mark.parametrize("serial", ["1", "2", "3", "7", "10%", "25%", "33%", "50%", "100%", "1%"])
@pytest.mark.parametrize("count", [1, 2, 5, 9, 40])
def test_batches_are_the_ones_ansible_runs(serial, count):
    hosts = [f"gpu-{i:03d}" for i in range(count)]
    ours = _upgrade.batches(list(reversed(hosts)), serial)
    assert ours == ansible_batches(hosts, serial)
    # The rolling play gets the sizes as its serial list: the same batches again.
    assert ansible_batches(hosts, [len(b) for b in ours]) == ours


@pytest.mark.parametrize("serial", ["0", "0%", "101%", "-1", "two", "1.5", ""])
def test_bad_serial_is_refused_naming_the_variable(serial):
    with pytest.raises(_upgrade.UpgradeError, match="gpufabric_upgrade_serial"):
        _upgrade.serial_sizes(serial, 4)


@pytest.mark.parametrize(
    "failed, total, pct, stop",
    [
        (0, 4, 0, False),
        (1, 4, 0, True),
        (1, 4, 25, False),
        (2, 4, 25, True),
        (2, 4, 50, False),
        (1, 1, 99, True),
        (0, 0, 0, False),
    ],
)
def test_stop_when_more_than_the_share_failed(failed, total, pct, stop):
    assert _upgrade.stop(failed, total, pct) is stop


# --------------------------------------------------------------------------------------------- node
def node_plan(**changes):
    plan = {
        "doca_ofed": {
            "profile": {"metapackage": "doca-ofed", "kernel_modules": True},
            "selected": "2.9.2-0.1.8",
            "expected_release": "24.10-2.1.8",
        },
        "gpu_driver": {
            "managed_by": "host",
            "packages": ["nvidia-kernel-open-dkms", "nvidia-driver-cuda"],
            "version": "580.105.08",
            "installed": "580.95.05-1",
            "loaded": "580.95.05",
        },
        "gpudirect_rdma": {"method": "peermem", "peermem_loaded_by": "host"},
        "gpudirect_storage": {"mode": "nvidia_fs", "nvidia_fs_loaded_by": "host"},
        "roce": {"interfaces": ["eth0"]},
    }
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(plan.get(key), dict):
            plan[key].update(value)
        else:
            plan[key] = value
    return plan


def facts(doca_installed="2.9.1-0.1.4", loaded_release="24.10-1.1.4", loaded="ofed"):
    packages = {"doca-ofed": [{"version": doca_installed}]} if doca_installed else {}
    return {"ansible": {"packages": packages}, "doca": {"loaded": loaded, "loaded_release": loaded_release}}


def actions(section):
    return {layer["layer"]: layer["action"] for layer in section["layers"]}


def test_a_node_behind_on_every_layer_needs_each_step_in_order():
    section = _upgrade.node_section(node_plan(), facts())
    assert [layer["layer"] for layer in section["layers"]] == [
        "doca_ofed",
        "gpu_driver",
        "nvidia_peermem",
        "nvidia_fs",
        "qos",
    ]
    assert actions(section) == {
        "doca_ofed": "install+reload",
        "gpu_driver": "install+reload",
        "nvidia_peermem": "reload",
        "nvidia_fs": "reload",
        "qos": "reapply",
    }
    assert section["window"] is True
    assert section["changes"][0] == "doca-ofed 2.9.1-0.1.4 -> 2.9.2-0.1.8 (openibd reload)"
    assert section["changes"][1] == "NVIDIA driver 580.95.05 -> 580.105.08 (module reload)"


def test_a_node_at_its_targets_needs_no_window():
    plan = node_plan(gpu_driver={"installed": "580.105.08-1", "loaded": "580.105.08"})
    section = _upgrade.node_section(plan, facts("2.9.2-0.1.8", "24.10-2.1.8"))
    assert section["changes"] == []
    assert section["window"] is False
    assert set(actions(section).values()) == {"none"}


def test_installed_but_not_loaded_is_a_reload_only():
    """A failed window installed the packages but did not load them: the rerun reloads."""
    plan = node_plan(gpu_driver={"installed": "580.105.08-1", "loaded": "580.105.08"})
    section = _upgrade.node_section(plan, facts("2.9.2-0.1.8", "24.10-1.1.4"))
    assert actions(section)["doca_ofed"] == "reload"
    assert "openibd reload" in section["changes"][0]
    assert actions(section)["nvidia_peermem"] == "reload"


def test_only_the_driver_moves():
    plan = node_plan()
    section = _upgrade.node_section(plan, facts("2.9.2-0.1.8", "24.10-2.1.8"))
    assert actions(section) == {
        "doca_ofed": "none",
        "gpu_driver": "install+reload",
        "nvidia_peermem": "reload",
        "nvidia_fs": "reload",
        "qos": "none",  # mlx5 is not reloaded
    }


def test_dmabuf_and_operator_loaded_modules_are_not_the_hosts_to_reload():
    plan = node_plan(
        gpudirect_rdma={"method": "dmabuf", "peermem_loaded_by": None},
        gpudirect_storage={"mode": "nvidia_fs", "nvidia_fs_loaded_by": "operator"},
    )
    section = _upgrade.node_section(plan, facts())
    assert "nvidia_peermem" not in actions(section)
    assert "nvidia_fs" not in actions(section)


def test_a_driver_from_the_gpu_operator_is_not_the_windows():
    plan = node_plan(gpu_driver={"managed_by": "operator", "packages": [], "version": "580.105.08"})
    section = _upgrade.node_section(plan, facts("2.9.2-0.1.8", "24.10-2.1.8"))
    assert actions(section)["gpu_driver"] == "none"
    assert section["window"] is False


def test_a_host_driver_the_collection_does_not_install_is_left_alone():
    plan = node_plan(gpu_driver={"managed_by": "host", "packages": [], "version": "580.95.05"})
    section = _upgrade.node_section(plan, facts("2.9.2-0.1.8", "24.10-2.1.8"))
    assert "gpu_driver" not in actions(section)


@pytest.mark.parametrize(
    "package, driver, same",
    [
        ("580.95.05-1", "580.95.05", True),
        ("3:580.95.05-1.el9", "580.95.05", True),
        ("580.95.05-1", "580.105.08", False),
        (None, "580.95.05", False),
    ],
)
def test_driver_package_versions(package, driver, same):
    assert _upgrade.driver_matches(package, driver) is same


# --------------------------------------------------------------------------------------------- plan
def records(**changes):
    out = {
        "gpu-node-01": {"k8s_node_name": "node-01", "upgrade": {"changes": ["doca-ofed a -> b"], "window": True}},
        "gpu-node-02": {"k8s_node_name": "node-02", "upgrade": {"changes": ["doca-ofed a -> b"], "window": True}},
        "gpu-node-03": {"k8s_node_name": "node-03", "upgrade": {"changes": [], "window": False}},
    }
    for host, record in changes.items():
        out[host] = record
    return out


def k8s_node(name, unschedulable=False, **annotations):
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"unschedulable": unschedulable}}


VALUES = {"gpufabric_upgrade_serial": "1", "gpufabric_upgrade_max_fail_percentage": 0}


def test_the_plan_batches_only_the_nodes_to_change():
    nodes = [k8s_node("node-01"), k8s_node("node-02"), k8s_node("node-03")]
    result = _upgrade.plan(VALUES, records(), nodes, {}, RULES)
    assert result["pending"] == ["gpu-node-01", "gpu-node-02"]
    assert result["batches"] == [["gpu-node-01"], ["gpu-node-02"]]
    assert result["serial"] == [1, 1]
    assert result["nodes"]["gpu-node-03"]["status"] == "at target"
    assert "batch 1: gpu-node-01" in result["summary"]
    assert "batch 2: gpu-node-02" in result["summary"]
    assert "at target, not drained: gpu-node-03" in result["summary"]
    assert result["settings"]["gpufabric_upgrade_drain_timeout"] == 600


def test_a_node_a_failed_run_left_cordoned_is_resumed_first_in_its_order():
    nodes = [
        k8s_node("node-01"),
        k8s_node("node-02"),
        k8s_node("node-03", True, **{_upgrade.CORDONED_BY: "upgrade", _upgrade.FAILED: "upgrade: openibd failed"}),
    ]
    result = _upgrade.plan(dict(VALUES, gpufabric_upgrade_serial="50%"), records(), nodes, {}, RULES)
    assert result["nodes"]["gpu-node-03"]["status"] == "to resume"
    assert result["batches"] == [["gpu-node-01"], ["gpu-node-02"], ["gpu-node-03"]]
    assert "resumes: a run left it cordoned: upgrade: openibd failed" in result["summary"]


def test_a_node_someone_else_cordoned_is_noted():
    result = _upgrade.plan(VALUES, records(), [k8s_node("node-01", True), k8s_node("node-02")], {}, RULES)
    assert any("node-01 is cordoned by someone else" in n for n in result["notes"])
    assert any("no Node 'node-03'" not in n for n in result["notes"])


def test_without_a_cluster_nodes_are_upgraded_without_drain_notes():
    result = _upgrade.plan(VALUES, records(), None, {}, RULES)
    assert result["pending"] == ["gpu-node-01", "gpu-node-02"]
    assert result["notes"] == []


def test_nodes_outside_the_limit_are_left_out():
    result = _upgrade.plan(VALUES, records(), [], {}, RULES, hosts=["gpu-node-02"])
    assert result["pending"] == ["gpu-node-02"]
    assert result["nodes"]["gpu-node-01"]["status"] == "outside this run"


def test_a_second_run_plans_nothing():
    done = {h: dict(r, upgrade={"changes": [], "window": False}) for h, r in records().items()}
    result = _upgrade.plan(VALUES, done, [k8s_node("node-01"), k8s_node("node-02"), k8s_node("node-03")], {}, RULES)
    assert result["pending"] == [] and result["batches"] == [] and result["serial"] == []


def test_the_cluster_phase_follows_the_order_and_refuses_a_skipped_major():
    values = dict(
        VALUES,
        gpu_operator_chart_version="v26.7.0",
        network_operator_chart_version="26.4.1",
    )
    result = _upgrade.plan(values, records(), [], {"gpu_operator": "v26.3.1", "network_operator": "26.4.1"}, RULES)
    assert [c["layer"] for c in result["cluster"]] == ["network_operator", "gpu_operator"]
    assert [c["change"] for c in result["cluster"]] == [False, True]
    assert "gpu_operator v26.3.1 -> v26.7.0" in result["summary"]
    with pytest.raises(_upgrade.UpgradeError) as refused:
        _upgrade.plan(values, records(), [], {"gpu_operator": "v25.3.0"}, RULES)
    assert "gpu_operator_chart_version: v26.7.0" in refused.value.problems[0]


def test_the_cluster_phase_can_be_left_out():
    values = dict(VALUES, gpu_operator_chart_version="v26.7.0", gpufabric_upgrade_cluster=False)
    result = _upgrade.plan(values, records(), [], {"gpu_operator": "v24.9.0"}, RULES)
    assert result["cluster"] == []
    assert "cluster phase: none" in result["summary"]


def test_every_problem_is_reported_at_once():
    values = dict(VALUES, gpufabric_upgrade_serial="0", gpu_operator_chart_version="v26.7.0")
    with pytest.raises(_upgrade.UpgradeError) as refused:
        _upgrade.plan(values, records(), [], {"gpu_operator": "v25.3.0"}, RULES)
    assert len(refused.value.problems) == 2


def test_the_settings_defaults_are_the_specs():
    """The plan hands the rolling play every upgrade variable; its defaults are the argument spec's."""
    spec = yaml.safe_load((REPO / "roles" / "plan" / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["upgrade"]["options"]
    assert {name: o.get("default") for name, o in options.items()} == _upgrade.SETTINGS


def test_plan_input_is_not_changed():
    given = records()
    before = copy.deepcopy(given)
    _upgrade.plan(VALUES, given, [], {}, RULES)
    assert given == before
