"""The switch review files through the render_files module, as the plan role writes them to
plan_dir/switches: written once, unchanged on a rerun, a leaf that leaves the plan is removed."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from support import fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan, render
from ansible_collections.gpufabric.rollout.plugins.modules import render_files


def run(capsys, path, objects):
    with patch_module_args({"path": str(path), "objects": objects}), pytest.raises(SystemExit):
        render_files.main()
    return json.loads(capsys.readouterr().out)


def test_the_review_files_converge(tmp_path, capsys):
    leaves = qos_plan.plan(fabric(), switches())
    first = run(capsys, tmp_path, render.files(leaves))
    assert first["changed"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaf-a.nvue.yaml", "leaf-b.sonic.yaml", "ports.yaml"]
    assert yaml.safe_load((tmp_path / "leaf-a.nvue.yaml").read_text()) == [{"set": leaves["leaf-a"]["qos"]}]
    assert run(capsys, tmp_path, render.files(leaves))["changed"] is False
    del leaves["leaf-b"]
    third = run(capsys, tmp_path, render.files(leaves))
    assert third["changed"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaf-a.nvue.yaml", "ports.yaml"]
