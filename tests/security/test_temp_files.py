"""Finding 7: the modules that write files as root (validate_report, render_files, cufile_config) wrote
through a temporary name anyone could predict (``<file>.tmp``, ``.<file>.<pid>.tmp``,
``.<file>.gpufabric.tmp``) opened with open(), which follows a symlink. A user who plants a symlink
at that name (the report directory may be under /var/tmp) gets root to write over the file it points
to. Now: tempfile.mkstemp beside the target (O_EXCL, a random name) and os.replace; a symlink at the
target itself is replaced, never written through or read into a diff."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.modules import render_files, validate_report

REPO = Path(__file__).resolve().parents[2]
CUFILE_MODULE = REPO / "plugins" / "modules" / "cufile_config.py"
SHIPPED_CUFILE = REPO / "tests" / "unit" / "gds" / "fixtures" / "cufile" / "h200-gds-1.15.1.6-cuda13.0.json"
SECRET = "root's file, which the attacker wants overwritten\n"


@pytest.fixture()
def victim(tmp_path):
    path = tmp_path / "elsewhere" / "victim"
    path.parent.mkdir()
    path.write_text(SECRET)
    path.chmod(0o600)
    return path


def untouched(victim: Path) -> bool:
    return victim.read_text() == SECRET and (victim.stat().st_mode & 0o777) == 0o600


# ----------------------------------------------------------------------------------- validate_report
def test_validate_report_never_writes_through_a_planted_symlink(tmp_path, victim):
    planted = "report.html.tmp"  # the old temporary name
    reports = tmp_path / "validate"
    reports.mkdir()
    (reports / planted).symlink_to(victim)
    target = reports / "report.html"
    changed = validate_report._write(SimpleNamespace(check_mode=False), str(target), "<html>report</html>")
    assert changed is True
    assert untouched(victim), "root wrote through the planted symlink"
    assert not target.is_symlink() and target.read_text() == "<html>report</html>"
    assert validate_report._write(SimpleNamespace(check_mode=False), str(target), "<html>report</html>") is False
    assert sorted(p.name for p in reports.iterdir()) == sorted({"report.html", planted})


# ----------------------------------------------------------------------------------- render_files
def run_render(capsys, args, diff=False):
    args = dict(args, _ansible_check_mode=False, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        render_files.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def render_args(path):
    return {"path": str(path), "objects": [], "files": [{"file": "kustomization.yaml", "content": "resources: []\n"}]}


def test_render_files_never_writes_through_a_planted_temporary_name(tmp_path, capsys, victim):
    render = tmp_path / "render"
    render.mkdir()
    # the old name: .<file>.<pid of the module>.tmp (the module runs in this process here)
    (render / f".kustomization.yaml.{os.getpid()}.tmp").symlink_to(victim)
    code, result = run_render(capsys, render_args(render))
    assert code == 0, result
    assert untouched(victim), "root wrote through the planted symlink"
    assert (render / "kustomization.yaml").read_text() == "resources: []\n"


def test_render_files_replaces_a_symlink_at_the_target_without_reading_it(tmp_path, capsys, victim):
    render = tmp_path / "render"
    render.mkdir()
    (render / "kustomization.yaml").symlink_to(victim)
    code, result = run_render(capsys, render_args(render), diff=True)
    assert code == 0, result
    assert SECRET.strip() not in json.dumps(result), "the diff showed the file the symlink points to"
    assert untouched(victim)
    target = render / "kustomization.yaml"
    assert not target.is_symlink() and target.read_text() == "resources: []\n"
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    code, again = run_render(capsys, render_args(render))
    assert code == 0 and again["changed"] is False


# ----------------------------------------------------------------------------------- cufile_config
def run_cufile(tmp_path, args):
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / ".collections"), *sys.path]))
    proc = subprocess.run(
        [sys.executable, str(CUFILE_MODULE), str(argfile)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(proc.stdout)


def test_cufile_config_never_writes_through_a_planted_temporary_name(tmp_path, victim):
    etc = tmp_path / "etc"
    etc.mkdir()
    cufile = etc / "cufile.json"
    shutil.copyfile(SHIPPED_CUFILE, cufile)
    cufile.chmod(0o644)
    (etc / ".cufile.json.gpufabric.tmp").symlink_to(victim)
    result = run_cufile(tmp_path, {"path": str(cufile), "compat_mode": False})
    assert result.get("changed") is True, result
    assert untouched(victim), "root wrote through the planted symlink"
    assert not cufile.is_symlink() and result["config"]["properties"]["allow_compat_mode"] is False
    assert '"allow_compat_mode": false' in cufile.read_text()
    assert run_cufile(tmp_path, {"path": str(cufile), "compat_mode": False})["changed"] is False
    assert oct(cufile.stat().st_mode & 0o777) == "0o644", "the file's mode is kept"
    assert sorted(p.name for p in etc.iterdir()) == [".cufile.json.gpufabric.tmp", "cufile.json"]
