"""The GPU probe script (without PyTorch here) and its JSON loader on real output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe

REPO = Path(__file__).resolve().parents[3]
PROBE = REPO / "roles/validate/files/gpu_probe.py"
FIX = Path(__file__).parent / "fixtures/gpu_probe"


def run(*args):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ""}
    return subprocess.run(
        [sys.executable, "-S", str(PROBE), *args], capture_output=True, text=True, env=env, check=False
    )


def test_probe_without_pytorch_says_so_in_json_and_exits_3():
    result = run()
    assert result.returncode == 3, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "gpufabric.gpu_probe" and doc["schema_version"] == 1
    assert doc["errors"][0]["section"] == "import" and "PyTorch" in doc["errors"][0]["error"]
    assert doc["env"] == {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
    _gpuprobe.load(result.stdout)


def test_probe_rejects_bad_sizes():
    result = run("--max-bytes", "4X")
    assert result.returncode == 2 and "bad size" in result.stderr


def test_real_h200_output_loads_with_parsed_links():
    doc = _gpuprobe.load((FIX / "h200x1-2026-12-01.json").read_text())
    gpu = doc["gpus"][0]
    assert (gpu["name"], gpu["pci_bus_id"], gpu["sm"]) == ("NVIDIA H200", "0000:00:06.0", 90)
    assert gpu["pcie_parsed"] == {
        "current_speed_gts": 32.0,
        "max_speed_gts": 32.0,
        "current_width": 16,
        "max_width": 16,
    }
    assert gpu["h2d_gbps"] == pytest.approx(55.476, abs=1e-3) and gpu["d2h_gbps"] == pytest.approx(55.305, abs=1e-3)
    assert gpu["device_copy"]["copy_gbps"] == pytest.approx(4273.1, abs=0.1)
    assert (doc["torch"], doc["nccl"], doc["driver"]) == ("2.11.0+cu130", "2.28.9", "580.159.04")
    assert doc["allreduce"] == {"skipped": "one GPU: no all-reduce between GPUs", "world": 1}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("not json", "not JSON"),
        ("[]", "JSON object"),
        ('{"schema": "other"}', "schema"),
        ('{"schema": "gpufabric.gpu_probe", "schema_version": 9, "gpus": []}', "schema_version"),
        ('{"schema": "gpufabric.gpu_probe", "schema_version": 1, "gpus": [{"h2d_gbps": -1}]}', "non-negative"),
        ('{"schema": "gpufabric.gpu_probe", "schema_version": 1, "gpus": [], "allreduce": {"rows": [{}]}}', "bytes"),
    ],
)
def test_bad_documents_raise_the_documented_error(doc, message):
    with pytest.raises(_gpuprobe.GpuProbeError, match=message):
        _gpuprobe.load(doc)
