"""The nccl.conf planner against topology fixtures (see fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from intent_support import fabric

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "cases.yml").read_text())["cases"]


def _run(case):
    topology = yaml.safe_load((FIXTURES / case["topology"]).read_text())
    return _nccl.plan(
        topology,
        fabric(**case["fabric"]),
        case["nccl_version"],
        case["socket_ifname"],
        topo_file=case.get("topo_file"),
        gid_index_override=case.get("gid_index"),
        gdr_level=case.get("gdr_level", "auto"),
        extra=case.get("extra"),
    )


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "expect" in c))
def test_plan(name):
    case = CASES[name]
    entries = _run(case)
    assert dict(entries) == case["expect"]
    # The file is rendered in plan order and reads back to the same entries.
    text = _nccl.render(entries, header="# managed")
    assert text.startswith("# managed\n")
    assert list(_nccl.parse(text).items()) == list(entries.items())


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "error" in c))
def test_plan_refused(name):
    case = CASES[name]
    with pytest.raises(_nccl.NcclPlanError) as info:
        _run(case)
    assert case["error"] in str(info.value)


@pytest.mark.parametrize("name", ["dgx-8rail.yml", "shared-nic.yml"])
def test_planned_hca_matches_discovery_summary(name):
    """The rail-ordered HCA list equals the one topology_facts summarises in nccl.ib_hca."""
    topology = yaml.safe_load((FIXTURES / name).read_text())
    assert _nccl.ib_hca(topology) == topology["nccl"]["ib_hca"]


@pytest.mark.parametrize(
    ("version", "older_than_2_21"),
    [
        ("2.20.5", True),
        ("2.21", False),
        ("2.21.0", False),
        ("v2.9.9", True),
        ("2.100.1", False),
        ("2.19.3-1+cuda12.2", True),
        ("3.0", False),
    ],
)
def test_gid_index_version_boundary(version, older_than_2_21):
    assert _nccl.needs_gid_index(version) is older_than_2_21
