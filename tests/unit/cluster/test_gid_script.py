"""The NCCL < 2.21 GID-index script (ConfigMap nccl-gid-index) on sysfs-shaped GID tables."""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils._cluster_plan import gid_index_script

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "gid_tables.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_gid_index_script(case, tmp_path):
    sysfs = tmp_path / "sys"
    for dev, entries in case["devices"].items():
        port = sysfs / "class" / "infiniband" / dev / "ports" / "1"
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True)
        for idx, gid, kind, ndev in entries:
            (port / "gids" / str(idx)).write_text(gid + "\n")
            (port / "gid_attrs" / "types" / str(idx)).write_text(kind + "\n")
            (port / "gid_attrs" / "ndevs" / str(idx)).write_text(ndev + "\n")
    script = tmp_path / "find-gid-index.sh"
    script.write_text(gid_index_script())
    out = tmp_path / "env"
    proc = subprocess.run(
        ["sh", str(script), case["ifname"], str(out)],
        capture_output=True,
        text=True,
        env={"GPUFABRIC_SYSFS": str(sysfs), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    if case["expect"] is None:
        assert proc.returncode == 1
        assert "no RoCE v2 IPv4 GID on {}".format(case["ifname"]) in proc.stderr
        assert not out.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(case["expect"])
        assert out.read_text() == "NCCL_IB_GID_INDEX=%d\n" % case["expect"]
