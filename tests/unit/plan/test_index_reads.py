"""The package indexes a node's plan reads (plan/index_reads.py): which repositories, with which
doca_repo_info arguments (the variable a failure names), one key per distinct read so that the plan
reads each once per run, and each node's indexes picked back from the run's reads."""

from __future__ import annotations

import copy

import pytest
from conftest import check, lab_intent

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import index_reads as _index_reads

DEBIAN = {"distribution": "Debian", "distribution_version": "12.11", "os_family": "Debian", "architecture": "x86_64"}
ROCKY = {"distribution": "Rocky", "distribution_version": "9.4", "distribution_major_version": "9"}
ROCKY.update(os_family="RedHat", architecture="x86_64")
HOST_DRIVER = {
    "managed_by": "host",
    "version": "580.95.05",
    "packages": ["nvidia-kernel-open-dkms", "nvidia-driver-cuda"],
}


def values(specs, **changes):
    variables = copy.deepcopy(lab_intent())
    variables.update(changes)
    checked, problems = check(specs, "node", variables)
    assert problems == []
    return checked


def test_the_lab_node_reads_the_doca_repository_of_its_release_os_and_arch(specs):
    reads = _index_reads.index_reads(values(specs), DEBIAN, "gpu-node-01")
    assert [(r["name"], r["host"], r["url"], r["format"]) for r in reads] == [
        ("doca", "gpu-node-01", "file:///var/lib/gpufabric-lab/repo/doca/2.9.1/debian12/x86_64/", "apt")
    ]
    assert (reads[0]["variable"], reads[0]["off_setting"]) == (
        "doca_ofed_repo_base_url",
        "gpufabric_doca_ofed_enabled: false",
    )
    assert reads[0]["validate_certs"] is True


def test_a_full_repository_url_is_the_variable_a_failed_read_names(specs):
    url = "https://mirror.example/doca/2.9.1/rhel9/x86_64/"
    reads = _index_reads.index_reads(values(specs, doca_ofed_repo_url=url), ROCKY, "gpu-node-01")
    assert [(r["url"], r["format"], r["variable"]) for r in reads] == [(url, "dnf", "doca_ofed_repo_url")]


def test_the_driver_repository_is_read_only_when_the_collection_installs_the_host_driver(specs):
    url = "https://mirror.example/cuda/debian12/x86_64"
    checked = values(specs, gpufabric_gpu_driver=HOST_DRIVER, gpu_driver_repo_url=url, gpu_driver_validate_certs=False)
    reads = {r["name"]: r for r in _index_reads.index_reads(checked, DEBIAN, "n1")}
    assert set(reads) == {"doca", "driver"}
    assert (reads["driver"]["url"], reads["driver"]["variable"], reads["driver"]["validate_certs"]) == (
        url,
        "gpu_driver_repo_url",
        False,
    )
    assert reads["driver"]["off_setting"] == "gpufabric_gpu_driver.packages: [] (and install the driver yourself)"
    # without packages to install (the default), or with DOCA-OFED off, that repository is not read
    plain = values(specs, gpufabric_doca_ofed_enabled=False)
    assert _index_reads.index_reads(plain, DEBIAN, "n1") == []


def test_a_doca_url_that_cannot_be_composed_is_left_to_the_node_plan(specs):
    """No DOCA repository for this architecture: no read; the node plan refuses it naming the variable."""
    odd = dict(DEBIAN, architecture="riscv64")
    assert _index_reads.index_reads(values(specs), odd, "n1") == []


def test_nodes_with_the_same_read_share_one_key_and_get_its_result(specs):
    checked = values(specs)
    first = _index_reads.index_reads(checked, DEBIAN, "n1")
    second = _index_reads.index_reads(checked, DEBIAN, "n2")
    other = _index_reads.index_reads(values(specs, doca_ofed_validate_certs=False), DEBIAN, "n3")
    assert first[0]["key"] == second[0]["key"] != other[0]["key"]
    # the loop of tasks/main.yml: distinct keys, each read by the first node that names it
    ran = [
        {"item": first[0], "packages": {"doca-ofed": ["2.9.1-0.1.4"]}},
        {"item": other[0], "failed": True, "msg": "x"},
    ]
    assert _index_reads.node_indexes(second, ran) == {"doca": ran[0]}
    assert _index_reads.node_indexes(other, ran) == {"doca": ran[1]}
    # a skipped read, or none at all, gives the node no index
    assert _index_reads.node_indexes(second, [{"item": first[0], "skipped": True}]) == {}
    assert _index_reads.node_indexes(second, []) == {}


@pytest.mark.parametrize("arg", _index_reads.READ_ARGS)
def test_every_read_argument_is_in_the_key(arg):
    base = _index_reads._read("doca", "n1", "file:///r/", "apt", True, "doca_ofed_repo_base_url", "off")
    changed = dict(base, **{arg: not base[arg] if isinstance(base[arg], bool) else base[arg] + "x"})
    key = _index_reads._read("doca", "n1", *(changed[a] for a in _index_reads.READ_ARGS))["key"]
    assert key != base["key"]
