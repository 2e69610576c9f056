"""The switch_agreement module: where each leaf's running configuration comes from (the API trees
passed in, else the export directory) and why a leaf was not checked; a leaf that was not read is
never a pass."""

from __future__ import annotations

import json

from module_support import run_module
from support import FIXTURES, fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan as _qos_plan
from ansible_collections.gpufabric.rollout.plugins.modules import switch_agreement


def leaves():
    return _qos_plan.plan(fabric(), switches())


def test_exports_come_from_the_api_trees_then_the_directory(tmp_path, monkeypatch, capsys):
    nvue = json.loads((FIXTURES / "nvue-leaf-a.json").read_text())
    (tmp_path / "leaf-b.config_db.json").write_text((FIXTURES / "sonic-leaf-b-config_db.json").read_text())
    (tmp_path / "leaf-a.json").write_text("not json")  # not read: leaf-a comes from the API
    args = {"leaves": leaves(), "exports": {"leaf-a": nvue}, "export_dir": str(tmp_path)}
    code, result = run_module(switch_agreement, args, monkeypatch, capsys)
    assert code == 0
    assert result["sources"] == {"leaf-a": "api", "leaf-b": str(tmp_path / "leaf-b.config_db.json")}
    assert (result["ok"], result["findings"], result["missing"]) == (True, [], [])
    assert result["checked"] == ["leaf-a", "leaf-b"]


def test_a_leaf_that_was_not_read_fails_the_check_with_the_reason(tmp_path, monkeypatch, capsys):
    (tmp_path / "leaf-a.json").write_text("{not json")
    code, result = run_module(switch_agreement, {"leaves": leaves(), "export_dir": str(tmp_path)}, monkeypatch, capsys)
    assert code == 0 and result["ok"] is False
    assert result["missing"][0].startswith(f"leaf-a: {tmp_path / 'leaf-a.json'} is not JSON")
    assert result["missing"][1].startswith(f"leaf-b: no export at {tmp_path / 'leaf-b.config_db.json'}")
    code, result = run_module(switch_agreement, {"leaves": leaves()}, monkeypatch, capsys)
    assert result["ok"] is False
    assert result["missing"] == [
        "leaf-a: not read: neither from its API (set gpufabric_switch_api_user and gpufabric_switch_api_password) "
        "nor from an export (gpufabric_switch_export_dir)",
        "leaf-b: not read: a SONiC leaf is checked from its export only "
        "(gpufabric_switch_export_dir/leaf-b.config_db.json)",
    ]
