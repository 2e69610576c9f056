"""_pcie_acs reads and writes every bridge in one setpci call (an operation group per bridge) and
keeps the per-bridge results of the old one-call-per-bridge reads: a bridge without ACS (setpci
stops there, exit 1, naming it) is skipped and the bridges after it are still read; output that
does not say which bridge is missing falls back to one call per bridge; a write that does not
hold is an error naming the bridge."""

from __future__ import annotations

import pytest
from module_support import fake_runner

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.pcie_acs import AcsError, read_registers, run_acs

ACS = "ECAP_ACS+0x6.w"
A, B, C = "0000:15:01.0", "0000:16:00.0", "0000:17:02.0"
NO_ACS = f"setpci: {B}: Instance #0 of Extended capability 000d not found - there are no capabilities with that id."


def batch(*groups):
    argv = ["setpci"]
    for bdf, op in groups:
        argv += ["-s", bdf, op]
    return tuple(argv)


def test_every_bridge_in_one_call():
    calls = []
    runner = fake_runner({batch((A, ACS), (B, ACS), (C, ACS)): "001d\n0011\n0000\n"}, calls)
    assert read_registers([A, B, C], runner) == {A: 0x1D, B: 0x11, C: 0}
    assert len(calls) == 1


def test_a_bridge_without_acs_is_skipped_and_the_rest_read_in_a_second_call():
    calls = []
    runner = fake_runner(
        {
            batch((A, ACS), (B, ACS), (C, ACS)): (1, "001d\n", NO_ACS + "\n"),
            batch((C, ACS)): "001d\n",
        },
        calls,
    )
    out = run_acs([A, B, C], 0x0C, runner, check_mode=True)
    assert [b["bdf"] for b in out["bridges"]] == [A, B, C]
    assert out["bridges"][1] == {"bdf": B, "skipped": f"no ACS capability ({NO_ACS})", "before": None, "after": None}
    assert out["bridges"][0]["after"] == out["bridges"][2]["after"] == "0011"
    assert len(calls) == 2


def test_output_that_does_not_name_the_missing_bridge_is_read_per_bridge():
    """setpci only warns about a selector that matches no device (exit 0, one value fewer)."""
    warn = "setpci: Warning: No devices selected for operation group 2.\n"
    calls = []
    runner = fake_runner(
        {
            batch((A, ACS), (B, ACS)): (0, "001d\n", warn),
            batch((A, ACS)): "001d\n",
            batch((B, ACS)): (0, "", warn),
        },
        calls,
    )
    assert read_registers([A, B], runner) == {A: 0x1D, B: f"no ACS capability ({warn.strip()})"}
    assert len(calls) == 3


def test_writes_go_in_one_call_and_are_read_back_in_one():
    calls = []
    runner = fake_runner(
        {
            batch((A, ACS), (B, ACS), (C, ACS)): "001d\n0011\n003d\n",
            batch((A, f"{ACS}=0011"), (C, f"{ACS}=0031")): "",
            batch((A, ACS), (C, ACS)): "0011\n0031\n",
        },
        calls,
    )
    out = run_acs([A, B, C], 0x0C, runner, check_mode=False)
    assert out["changed"] is True
    assert [(b["before"], b["after"], b["redirect"]) for b in out["bridges"]] == [
        ("001d", "0011", False),
        ("0011", "0011", False),
        ("003d", "0031", False),
    ]
    assert len(calls) == 3


def test_nothing_to_clear_is_one_read():
    calls = []
    runner = fake_runner({batch((A, ACS), (B, ACS)): "0011\n0000\n"}, calls)
    assert run_acs([A, B], 0x0C, runner, check_mode=False)["changed"] is False
    assert len(calls) == 1


def test_a_write_that_does_not_hold_names_the_bridge():
    runner = fake_runner(
        {
            batch((A, ACS), (B, ACS)): "001d\n0011\n",
            batch((A, f"{ACS}=0011")): "",
            batch((A, ACS)): "001d\n",
        }
    )
    with pytest.raises(AcsError, match=rf"^{A}: ACS control reads 001d after writing 0011$"):
        run_acs([A, B], 0x0C, runner, check_mode=False)


def test_no_bridges_no_call():
    calls = []
    assert run_acs([], 0x0C, fake_runner({}, calls), check_mode=False) == {"changed": False, "bridges": []}
    assert not calls
