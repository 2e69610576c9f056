"""nccl_config: /etc/nccl.conf holds exactly the planned variables, in order, after the managed header,
for NCCL 2.27.3 (no NCCL_IB_GID_INDEX: NCCL picks the RoCE v2 GID itself from 2.21 on; the older
NCCL's entries are unit-tested: tests/unit/plan/test_node_sections.py, tests/unit/nccl). Expected
values worked out by hand from the snapshots (rails, PCIe path class) and the fabric (ToS 106)."""

from __future__ import annotations

from conftest import read_text

DGX = [
    "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_8:1,mlx5_9:1",
    "NCCL_SOCKET_IFNAME==mgmt0",
    "NCCL_IB_TC=106",
    "NCCL_NET_GDR_LEVEL=PIX",
    "NCCL_TOPO_FILE=/etc/nccl/topo.xml",
]
EXPECTED = {
    "mofed": [*DGX, "NCCL_IB_QPS_PER_CONNECTION=4"],
    "inbox": DGX,
    "pcie": [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1",
        "NCCL_SOCKET_IFNAME==mgmt0",
        "NCCL_IB_TC=106",
        "NCCL_NET_GDR_LEVEL=PHB",
        "NCCL_TOPO_FILE=/etc/nccl/topo.xml",
    ],
}


def test_nccl_conf_holds_the_planned_variables_in_order(node):
    name, host = node
    lines = read_text(host, "/etc/nccl.conf").splitlines()
    assert lines[0].startswith("#"), lines
    assert [line for line in lines if not line.startswith("#")] == EXPECTED[name]
    assert host.file("/etc/nccl.conf").mode == 0o644
