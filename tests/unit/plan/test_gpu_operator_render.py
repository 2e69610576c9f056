"""Render mode of the gpu_operator role, run with ansible-playbook on the controller: it writes the
planned values and objects, a second run changes nothing, and --check predicts exactly what the
next run changes (including removing the files of objects the plan no longer has)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from conftest import REPO
from test_gpu_operator_plan import CHART, NO_DRIVER, OPERATOR, V100, plan_all

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "gpu_operator_render.yml"
pytestmark = pytest.mark.slow


def run(tmp_path: Path, plan: Dict[str, Any], check: bool = False, chart_path: str = "") -> int:
    """Run the role in render mode with this plan (and the chart source it was planned for);
    returns the number of changed tasks."""
    extra = tmp_path / "vars.json"
    extra.write_text(
        json.dumps(
            {
                "gpufabric_plan": plan,
                "gpufabric_k8s_render_dir": str(tmp_path / "render"),
                "gpu_operator_chart_path": chart_path,
                "ansible_python_interpreter": str(Path(os.sys.executable)),
            }
        )
    )
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", TMPDIR=str(tmp_path))
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-tmp")
    argv = ["ansible-playbook", "-i", "localhost,", str(PLAYBOOK), "-e", f"@{extra}"] + (["--check"] if check else [])
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    recap = re.search(r"localhost\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout)
    assert recap, proc.stdout[-2000:]
    return int(recap.group(1))


def files(tmp_path: Path) -> Dict[str, str]:
    root = tmp_path / "render" / "gpu_operator"
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def test_render_mode_writes_the_plan_once_and_check_mode_is_exact(specs, tmp_path):
    crd_plan, _plans = plan_all(
        specs,
        OPERATOR,
        NO_DRIVER,
        {"gpu_operator_driver_crd": True, "gpufabric_k8s_mode": "render"},
        node2_vars={"gpufabric_gds_enabled": False},
        node2_gpudirect={"gpus": V100},
    )
    section = crd_plan["gpu_operator"]
    local = str(CHART)  # the lab's chart source, which the plan read
    assert run(tmp_path, crd_plan, check=True, chart_path=local) > 0
    assert not (tmp_path / "render").exists(), "--check wrote nothing"
    first = run(tmp_path, crd_plan, chart_path=local)
    written = files(tmp_path)
    assert set(written) == {
        "kustomization.yaml",
        "values.yaml",
        "node-labels.yaml",
        "nvidiadriver-driver-580-95-05-open-gds.yaml",
        "nvidiadriver-driver-580-95-05-proprietary-rdma.yaml",
    }
    assert yaml.safe_load(written["values.yaml"]) == section["chart_values"]
    for driver in section["nvidia_drivers"]:
        assert yaml.safe_load(written[f"nvidiadriver-{driver['metadata']['name']}.yaml"]) == driver
    kustomization = yaml.safe_load(written["kustomization.yaml"])
    assert sorted(kustomization["resources"]) == sorted(n for n in written if n.startswith("nvidiadriver-"))
    assert "helmCharts" not in kustomization, "a local chart is installed with helm, as the file says"
    labels = {
        d["metadata"]["name"]: d["metadata"]["labels"] for d in yaml.safe_load_all(written["node-labels.yaml"]) if d
    }
    assert labels == section["node_labels"]
    assert first > 0
    assert run(tmp_path, crd_plan, chart_path=local) == 0, "a second run changes nothing"
    assert run(tmp_path, crd_plan, check=True, chart_path=local) == 0

    # The host takes the driver back: the NVIDIADrivers and node labels leave the rendered set.
    host_plan, _plans = plan_all(specs, cluster_vars={"gpufabric_k8s_mode": "render", "gpu_operator_chart_path": ""})
    predicted = run(tmp_path, host_plan, check=True)
    assert files(tmp_path) == written, "--check changed no file"
    assert run(tmp_path, host_plan) == predicted > 0
    after = files(tmp_path)
    assert set(after) == {"kustomization.yaml", "values.yaml"}
    assert yaml.safe_load(after["values.yaml"])["driver"]["enabled"] is False
    chart = yaml.safe_load(after["kustomization.yaml"])["helmCharts"][0]
    assert (chart["name"], chart["version"], chart["repo"]) == (
        "gpu-operator",
        "v26.7.0",
        "https://helm.ngc.nvidia.com/nvidia",
    )
