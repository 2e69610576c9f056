"""The LLDP read on the GPU nodes (plugins/modules/lldp_neighbours.py): lldpctl's JSON becomes the
neighbour per rail netdev; without lldpd (not installed, not running) the module says there is no
LLDP source instead of failing or returning an empty success that would read as "nothing wrong"."""

from __future__ import annotations

import json

from module_support import fake_runner, run_module
from support import FIXTURES

from ansible_collections.gpufabric.rollout.plugins.modules import lldp_neighbours

NODE1 = (FIXTURES / "lldpctl-gpu-node-01.json").read_text()
CALL = ("lldpctl", "-f", "json")


def run(runner, monkeypatch, capsys, **args):
    return run_module(lldp_neighbours, args, monkeypatch, capsys, runner)


def test_the_rail_netdevs_neighbours_are_returned(monkeypatch, capsys):
    calls = []
    runner = fake_runner({CALL: NODE1}, calls)
    rc, result = run(runner, monkeypatch, capsys, interfaces=["enp24s0np0", "enp159s0np0", "enp9s0np0"])
    assert rc == 0 and result["changed"] is False
    assert (result["source"], result["reason"]) == ("lldpd", "")
    assert result["neighbours"] == {
        "enp24s0np0": {"switch": "leaf-a", "port": "swp1", "descr": "swp1"},
        "enp159s0np0": {"switch": "leaf-b", "port": "Ethernet32", "descr": "Ethernet32"},
    }  # enp9s0np0 is not an interface lldpd reports: absent, not invented
    assert result["lldp"] == json.loads(NODE1)
    assert calls == [CALL]


def test_without_interfaces_every_reported_one_is_returned(monkeypatch, capsys):
    rc, result = run(fake_runner({CALL: NODE1}), monkeypatch, capsys)
    assert rc == 0 and result["neighbours"]["eno1"]["switch"] == "oob-switch"
    assert len(result["neighbours"]) == 9


def test_no_neighbour_at_all_is_an_empty_map_from_lldpd(monkeypatch, capsys):
    rc, result = run(fake_runner({CALL: '{\n  "lldp": {\n  }\n}\n'}), monkeypatch, capsys, interfaces=["enp24s0np0"])
    assert rc == 0 and (result["source"], result["neighbours"]) == ("lldpd", {})


def test_lldpd_not_installed_is_no_source_with_the_reason(monkeypatch, capsys):
    rc, result = run(fake_runner({}), monkeypatch, capsys, interfaces=["enp24s0np0"])
    assert rc == 0
    assert (result["source"], result["lldp"], result["neighbours"]) == ("none", None, {})
    assert result["reason"] == "lldpctl not found: install and start lldpd on the GPU node"


def test_lldpd_not_running_is_no_source_with_what_lldpctl_said(monkeypatch, capsys):
    said = "[WARN ] cannot connect to socket /run/lldpd.socket"
    rc, result = run(fake_runner({CALL: (1, "", said + "\n")}), monkeypatch, capsys)
    assert rc == 0 and result["source"] == "none"
    assert result["reason"] == f"lldpctl -f json exited 1: {said} (is lldpd running?)"


def test_output_that_is_not_lldpctl_json_fails_naming_why(monkeypatch, capsys):
    rc, result = run(fake_runner({CALL: "Interface: enp24s0np0"}), monkeypatch, capsys)
    assert rc == 1 and result["msg"].startswith("lldpctl -f json printed no JSON")
    rc, result = run(fake_runner({CALL: '{"neighbours": []}'}), monkeypatch, capsys)
    assert rc == 1 and result["msg"] == 'lldpctl -f json output is an object with an "lldp" key'
