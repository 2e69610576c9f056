"""Filters gpufabric.rollout.topology_report / topology_warnings."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.topology import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T

F = FilterModule().filters()


@pytest.fixture(scope="module")
def dgx(sysroot):
    root = sysroot("dgx-h200-8x8@1")
    with open(f"{root}/nvidia-smi-topo-m.txt", encoding="utf-8") as fh:
        return T.discover(root, fh.read())


def test_report_sections(dgx):
    text = F["topology_report"](dgx, "gpu-node-01")
    assert text.startswith("Topology of gpu-node-01\n")
    for heading in ("GPUs (8):", "RDMA NICs (10):", "Path classes", "Rails:", "Warnings (4):"):
        assert heading in text
    assert "rail 7: GPU7 (0000:c0:00.0) -> mlx5_9 enp193s0np0 [PIX]" in text
    assert "[port_down] mlx5_7/1" in text
    # the matrix row of GPU0 reads like nvidia-smi's
    row = next(line for line in text.splitlines() if line.startswith("GPU0 ") and "NV18" in line)
    assert row.split()[1:] == ["X"] + ["NV18"] * 7 + ["PIX", "PXB", "NODE", "NODE", "NODE"] + ["SYS"] * 5


def test_warnings_filter(dgx):
    assert [w["device"] for w in F["topology_warnings"](dgx, ["port_down"])] == ["mlx5_7/1"]
    assert len(F["topology_warnings"](dgx)) == 4
    with pytest.raises(AnsibleFilterError, match="unknown warning classes bogus"):
        F["topology_warnings"](dgx, ["bogus"])


def test_the_nccl_topology_is_planned_not_a_filter():
    """The NCCL topology XML is a plan output (plan/node.py), not something a filter computes."""
    assert "topology_nccl_xml" not in F


def test_filters_refuse_other_input():
    with pytest.raises(AnsibleFilterError, match="gpufabric_topology facts"):
        F["topology_report"]({"gpus": []})
