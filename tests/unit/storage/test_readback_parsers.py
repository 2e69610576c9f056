"""Parsers of the storage read-back, over text in the documented formats (sources in _storage_readback)."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as R

# fs/nfs/super.c layout of an NFSv4.1 mount over RDMA; a mount point with a space (octal escape, proc(5)).
MOUNTS = (
    "172.16.0.200:/export/datasets /mnt/my\\040data nfs4 rw,relatime,vers=4.1,rsize=1048576,wsize=1048576,"
    "namlen=255,hard,proto=rdma,nconnect=4,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=172.16.0.1,"
    "local_lock=none,addr=172.16.0.200 0 0\n"
    "tmpfs /run tmpfs rw,nosuid,nodev,size=3276800k,mode=755 0 0\n"
)
# lnetctl net show -v (Lustre 2.15 layout, lustre/tests/sanity-lnet.sh and liblnetconfig.c)
LNET = """net:
    - net type: lo
      local NI(s):
        - nid: 0@lo
          status: up
    - net type: o2ib
      local NI(s):
        - nid: 10.0.1.1@o2ib
          status: up
          interfaces:
              0: enp24s0np0
          health stats:
              health value: 1000
        - nid: 10.1.1.1@o2ib
          status: down
          interfaces:
              0: enp31s0np0
"""


def test_proc_mounts():
    first, second = R.parse_mounts(MOUNTS)
    assert first["target"] == "/mnt/my data" and first["fstype"] == "nfs4"
    assert first["options"]["proto"] == "rdma" and first["options"]["nconnect"] == "4" and "hard" in first["options"]
    assert second["source"] == "tmpfs"


def test_lnet_net_show():
    nis = R.parse_lnet_show(LNET)
    assert nis == [
        {"net": "lo", "nid": "0@lo", "status": "up", "interfaces": []},
        {"net": "o2ib", "nid": "10.0.1.1@o2ib", "status": "up", "interfaces": ["enp24s0np0"]},
        {"net": "o2ib", "nid": "10.1.1.1@o2ib", "status": "down", "interfaces": ["enp31s0np0"]},
    ]


def test_nvme_address_and_scale_output():
    assert R.parse_nvme_address("traddr=172.16.0.202,trsvcid=4420,host_traddr=10.4.1.1\n") == {
        "traddr": "172.16.0.202",
        "trsvcid": "4420",
        "host_traddr": "10.4.1.1",
    }
    text = "verbsRdma enable\nverbsPorts mlx5_0/1 [n1,n2]\nverbsPorts mlx5_2/1 mlx5_3/1 [n3]\n"
    assert R.parse_mmlsconfig(text, "n3") == {"verbsRdma": "enable", "verbsPorts": "mlx5_2/1 mlx5_3/1"}
    assert R.parse_mmlsconfig(text, "n9") == {"verbsRdma": "enable"}
    # The whole configuration, as mmlsconfig without attributes prints it (IBM Storage Scale command
    # reference, mmlsconfig example): node sections after the common values, "[common]" back to them.
    whole = (
        "Configuration data for cluster lab.scale:\n------------------\nclusterName lab.scale\n"
        "verbsRdma disable\npagepool 1G\n[n1,n2]\nverbsRdma enable\nverbsPorts mlx5_0/1\n[n3]\npagepool 2G\n"
        "[common]\nautoload yes\n\nFile systems in cluster lab.scale:\n------------------\n/dev/models\n"
    )
    assert R.parse_mmlsconfig(whole, "n2") == {
        "clusterName": "lab.scale",
        "verbsRdma": "enable",
        "pagepool": "1G",
        "verbsPorts": "mlx5_0/1",
        "autoload": "yes",
    }
    assert R.parse_mmlsconfig(whole, "n3")["verbsRdma"] == "disable" and "verbsPorts" not in R.parse_mmlsconfig(
        whole, "n3"
    )
    table = " Node number  Node name        GPFS state\n-----\n       1      n3               arbitrating\n"
    assert R.parse_mmgetstate(table, "n3") == "arbitrating" and R.parse_mmgetstate(table, "n1") is None
