"""The NCCL < 2.21 GID-index script (ConfigMap nccl-gid-index) against the one Python rule.

Each case of cases/gid_tables.yml is laid out as a sysfs GID table; the script run on it, the
rule (``_topology_parsers.select_roce_v2_gid`` over ``read_gids``, as discovery uses it) and the
case's expectation must agree. Cases with indexes 2, 10, 11 catch a listing-order choice.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import (
    gid_index_script,
    read_gids,
    select_roce_v2_gid,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "gid_tables.yml").read_text())


def lay_out(root, case):
    sysfs = root / "sys"
    for dev, entries in case["devices"].items():
        port = sysfs / "class" / "infiniband" / dev / "ports" / "1"
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True)
        for idx, gid, kind, ndev in entries:
            (port / "gids" / str(idx)).write_text(gid + "\n")
            (port / "gid_attrs" / "types" / str(idx)).write_text(kind + "\n")
            (port / "gid_attrs" / "ndevs" / str(idx)).write_text(ndev + "\n")
    return sysfs


def python_rule(root, ifname):
    """The index the Python rule picks for ``ifname``: first port (listing order) that has one."""
    sr = Sysroot(str(root))
    for dev in sr.listdir("sys/class/infiniband"):
        for port in sr.listdir(f"sys/class/infiniband/{dev}/ports"):
            chosen = select_roce_v2_gid(read_gids(sr, f"sys/class/infiniband/{dev}/ports/{port}"), ndev=ifname)
            if chosen:
                return chosen["gid_index"]
    return None


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_gid_index_script_and_python_rule_agree(case, tmp_path):
    sysfs = lay_out(tmp_path, case)
    script = tmp_path / "find-gid-index.sh"
    script.write_text(gid_index_script())
    out = tmp_path / "env"
    proc = subprocess.run(
        ["sh", str(script), case["ifname"], str(out)],
        capture_output=True,
        text=True,
        env={"GPUFABRIC_SYSFS": str(sysfs), "PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        check=False,
    )
    assert python_rule(tmp_path, case["ifname"]) == case["expect"]
    if case["expect"] is None:
        assert proc.returncode == 1
        assert "no RoCE v2 IPv4 GID on {}".format(case["ifname"]) in proc.stderr
        assert not out.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(case["expect"])
        assert out.read_text() == "NCCL_IB_GID_INDEX=%d\n" % case["expect"]


def test_discovery_takes_the_lowest_index_too(tmp_path):
    """Without a netdev filter (discovery's roce_v2_ipv4), 2 wins over 10 and 11."""
    case = next(c for c in CASES if c["id"] == "numeric-order-2-10-11")
    lay_out(tmp_path, case)
    entries = read_gids(Sysroot(str(tmp_path)), "sys/class/infiniband/mlx5_0/ports/1")
    assert [e["index"] for e in entries] == [2, 10, 11]
    assert select_roce_v2_gid(entries) == {
        "gid_index": 2,
        "gid": "0000:0000:0000:0000:0000:ffff:0ac8:0007",
        "ipv4": "10.200.0.7",
        "ndev": "net1",
    }
