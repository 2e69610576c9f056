"""The 802.1Q VLAN id parsers (/proc/net/vlan, net/8021q/vlanproc.c) and discovery's `roce_vlan`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import vlan as V
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

REPO = Path(__file__).resolve().parents[3]
HEADER = "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n"
CONFIG = HEADER + "enp68s0np0.100 | 100  | enp68s0np0\nbond0.4094     | 4094  | bond0\n"
DEV = (
    "enp68s0np0.100  VID: 100\t REORDER_HDR: 1  dev->priv_flags: 1001\n"
    "         total frames received            0\n"
    "Device: enp68s0np0\n"
)


def test_config_lists_every_vlan_netdev():
    assert V.parse_vlan_config(CONFIG) == {
        "enp68s0np0.100": {"vid": 100, "real_dev": "enp68s0np0"},
        "bond0.4094": {"vid": 4094, "real_dev": "bond0"},
    }
    assert V.parse_vlan_config(HEADER) == {}
    assert V.parse_vlan_config(CONFIG.encode()) == V.parse_vlan_config(CONFIG)


def test_dev_file_gives_the_vid_of_its_first_line():
    assert V.parse_vlan_dev(DEV) == {"name": "enp68s0np0.100", "vid": 100, "reorder_hdr": True}
    assert V.parse_vlan_dev("v7  VID: 7\t REORDER_HDR: 0  dev->priv_flags: 21\n")["reorder_hdr"] is False


@pytest.mark.parametrize(
    "text, lineno",
    [
        ("", None),
        ("VLAN Dev name\t | VLAN ID\n", 1),
        ("Name-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nVLAN Dev name | VLAN ID\n", 1),
        ("VLAN Dev name\t | VLAN ID\nsomething else\n", 2),
        (HEADER + "enp68s0np0.100 | 100\n", 3),
        (HEADER + "enp68s0np0.100 | 100 | enp68s0np0 | extra\n", 3),
        (HEADER + "enp68s0np0.100 | 4095  | enp68s0np0\n", 3),
        (HEADER + "enp68s0np0.100 | -1  | enp68s0np0\n", 3),
        (HEADER + "enp68s0np0.100 | \u0661\u0660\u0660  | enp68s0np0\n", 3),
        (HEADER + "enp68s0np0.100 | 99999999999999999999999  | enp68s0np0\n", 3),
        (HEADER + " | 100  | enp68s0np0\n", 3),
        (HEADER + "enp68s0np0.100 | 100  | \n", 3),
        (HEADER + "a b | 100  | enp68s0np0\n", 3),
        (HEADER + "enp68s0np0.100 | 100 | enp68s0np0\nenp68s0np0.100 | 100 | enp68s0np0\n", 4),
    ],
)
def test_malformed_config_is_refused_with_its_line(text, lineno):
    with pytest.raises(ParseError) as err:
        V.parse_vlan_config(text)
    assert err.value.lineno == lineno


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "enp68s0np0.100  VID: \t REORDER_HDR: 1  dev->priv_flags: 1001\n",
        "enp68s0np0.100  VID: 4095\t REORDER_HDR: 1  dev->priv_flags: 1001\n",
        "enp68s0np0.100  VID: x100\t REORDER_HDR: 1  dev->priv_flags: 1001\n",
        "enp68s0np0.100  VID: 100\t REORDER_HDR: 2  dev->priv_flags: 1001\n",
        "enp68s0np0.100  VID: 100\n",
        "enp68s0np0.100 | 100 | enp68s0np0\n",
        "Device: enp68s0np0\n",
    ],
)
def test_malformed_dev_file_is_refused(text):
    with pytest.raises(ParseError):
        V.parse_vlan_dev(text)


def test_non_text_is_a_parse_error():
    for func in (V.parse_vlan_config, V.parse_vlan_dev):
        with pytest.raises(ParseError):
            func(None)


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


@pytest.mark.parametrize(
    "files, vid",
    [
        ({"proc/net/vlan/config": CONFIG, "proc/net/vlan/enp68s0np0.100": DEV}, 100),
        ({"proc/net/vlan/enp68s0np0.100": DEV}, 100),
        ({"proc/net/vlan/config": CONFIG}, 100),
        ({}, None),  # 8021q not loaded, or a snapshot taken before proc/net/vlan was captured
        ({"proc/net/vlan/config": HEADER}, None),  # not a VLAN netdev
        ({"proc/net/vlan/config": "garbage\n"}, None),
        ({"proc/net/vlan/config": CONFIG.replace("| 100 ", "| 200 "), "proc/net/vlan/enp68s0np0.100": DEV}, None),
        ({"proc/net/vlan/enp68s0np0.100": DEV.replace("enp68s0np0.100  VID", "other.100  VID")}, None),
    ],
)
def test_vlan_id_of_a_netdev(tmp_path, files, vid):
    for rel, text in files.items():
        _write(str(tmp_path), rel, text)
    assert T.vlan_id(Sysroot(str(tmp_path)), "enp68s0np0.100") == vid


def test_no_vid_is_read_for_names_outside_proc_net_vlan(tmp_path):
    _write(str(tmp_path), "proc/net/vlan/config", CONFIG)
    for name in (None, "", "config", "../vlan/config", ".hidden"):
        assert T.vlan_id(Sysroot(str(tmp_path)), name) is None


def test_discovery_reports_roce_vlan_only_for_the_vlan_netdev(tmp_path):
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.materialize("roce-vlan-gid@1", str(tmp_path / "vlan"))
    facts = T.discover(str(tmp_path / "vlan"))
    assert {(r["roce_netdev"], r["roce_vlan"]) for r in facts["rails"]} == {("enp68s0np0.100", 100)}
    os.remove(tmp_path / "vlan/proc/net/vlan/config")
    os.remove(tmp_path / "vlan/proc/net/vlan/enp68s0np0.100")
    facts = T.discover(str(tmp_path / "vlan"))
    assert {(r["roce_netdev"], r["roce_vlan"]) for r in facts["rails"]} == {("enp68s0np0.100", None)}
    build.materialize("pcie-l40s-4x2@1", str(tmp_path / "flat"))
    facts = T.discover(str(tmp_path / "flat"))
    assert facts["rails"] and all(r["roce_vlan"] is None for r in facts["rails"])
