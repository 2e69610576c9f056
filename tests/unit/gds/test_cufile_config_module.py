"""cufile_config run as Ansible runs a module: a process reading its arguments from a file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "plugins" / "modules" / "cufile_config.py"
SHIPPED = Path(__file__).parent / "fixtures" / "cufile" / "h200-gds-1.15.1.6-cuda13.0.json"


def run_module(tmp_path, args, check=False, diff=False):
    payload = dict(args)
    if check:
        payload["_ansible_check_mode"] = True
    if diff:
        payload["_ansible_diff"] = True
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": payload}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / ".collections"), *sys.path]))
    proc = subprocess.run(
        [sys.executable, str(MODULE), str(argfile)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(proc.stdout)


@pytest.fixture
def cufile(tmp_path):
    path = tmp_path / "cufile.json"
    shutil.copyfile(SHIPPED, path)
    path.chmod(0o644)
    return path


def test_noop_leaves_shipped_file_untouched(tmp_path, cufile):
    stat = cufile.stat()
    result = run_module(
        tmp_path,
        {
            "path": str(cufile),
            "compat_mode": True,
            "use_pci_p2pdma": False,
            "rdma_dev_addr_list": [],
            "filesystems": {"weka": {"rdma_write_support": False}},
        },
    )
    assert result["changed"] is False and result["changed_keys"] == []
    assert cufile.read_bytes() == SHIPPED.read_bytes()
    assert cufile.stat().st_mtime_ns == stat.st_mtime_ns  # not even rewritten


def test_check_mode_reports_and_writes_nothing(tmp_path, cufile):
    result = run_module(tmp_path, {"path": str(cufile), "rdma_dev_addr_list": ["10.0.0.11"]}, check=True, diff=True)
    assert result["changed"] is True and result["changed_keys"] == ["properties.rdma_dev_addr_list"]
    assert '"rdma_dev_addr_list": ["10.0.0.11"]' in result["diff"]["after"]
    assert result["diff"]["before"] == SHIPPED.read_text()
    assert cufile.read_bytes() == SHIPPED.read_bytes()


def test_change_then_idempotent_and_mode_kept(tmp_path, cufile):
    args = {
        "path": str(cufile),
        "compat_mode": False,
        "rdma_dev_addr_list": ["10.0.0.11", "10.0.1.11"],
        "filesystems": {"nfs": {"rdma_dev_addr_list": ["10.0.0.11"]}, "gpfs": {"gds_write_support": True}},
        "backup": True,
    }
    first = run_module(tmp_path, args)
    assert first["changed"] is True
    assert sorted(first["changed_keys"]) == sorted(
        [
            "properties.allow_compat_mode",
            "properties.rdma_dev_addr_list",
            "fs.nfs.rdma_dev_addr_list",
            "fs.gpfs.gds_write_support",
        ]
    )
    assert first["config"]["properties"]["allow_compat_mode"] is False
    assert Path(first["backup_file"]).read_bytes() == SHIPPED.read_bytes()
    assert oct(cufile.stat().st_mode & 0o777) == "0o644"
    second = run_module(tmp_path, args)
    assert second["changed"] is False


def test_missing_file_fails_unless_create(tmp_path):
    missing = tmp_path / "none.json"
    failed = run_module(tmp_path, {"path": str(missing), "compat_mode": True})
    assert failed.get("failed") and "does not exist" in failed["msg"]
    created = run_module(tmp_path, {"path": str(missing), "compat_mode": True, "create": True})
    assert created["changed"] and json.loads(missing.read_text()) == {"properties": {"allow_compat_mode": True}}


def test_unknown_filesystem_refused_by_argument_spec(tmp_path, cufile):
    result = run_module(tmp_path, {"path": str(cufile), "filesystems": {"zfs": {"a": 1}}})
    assert result.get("failed") and "zfs" in result["msg"]
    assert cufile.read_bytes() == SHIPPED.read_bytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text.replace('"level": "ERROR"', '"level": "ERROR'), "unterminated string"),
        (
            lambda text: text.replace('"nvtx": false', '"nvtx": ' + "[" * 100 + "]" * 100),
            "nesting deeper than 64 levels",
        ),
        (lambda text: text.replace('"nvtx": false', '"nvtx": NaN'), "unexpected token 'NaN'"),
    ],
    ids=["unterminated", "deep-nesting", "nan"],
)
def test_malformed_file_fails_naming_file_line_and_column(tmp_path, cufile, damage, message):
    text = damage(SHIPPED.read_text())
    cufile.write_text(text)
    result = run_module(tmp_path, {"path": str(cufile), "compat_mode": True})
    assert result.get("failed") is True and "Traceback" not in json.dumps(result)
    assert result["msg"].startswith(f"cufile_config: {cufile}: ")
    assert message in result["msg"]
    assert " at line " in result["msg"] and " column " in result["msg"]
    assert cufile.read_text() == text


def test_bytes_that_are_not_utf8_fail_naming_the_line(tmp_path, cufile):
    data = SHIPPED.read_bytes().replace(b"// nvtx profiling on/off", b"// nvtx profiling \xff on/off")
    cufile.write_bytes(data)
    lineno = data.split(b"\n").index(next(line for line in data.split(b"\n") if b"\xff" in line)) + 1
    result = run_module(tmp_path, {"path": str(cufile), "compat_mode": True})
    assert result.get("failed") is True
    assert result["msg"].startswith(f"cufile_config: {cufile}: byte 0xff at offset ")
    assert f"is not UTF-8 (line {lineno}: " in result["msg"]
