"""Helpers of the validate tests: lab snapshots, a down-trained NIC, topology facts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology

REPO = Path(__file__).resolve().parents[3]


def load_file(name: str, path: Path):
    """A Python file of the repository (a test fixture module, a lab script) as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_lab_nodes(tmp_path_factory):
    """Two dgx-h200-8x8 lab nodes: name -> sysroot path."""
    build = load_file("validate_snapshots_build", REPO / "lab/snapshots/build.py")
    out = {}
    for n in (1, 2):
        dest = tmp_path_factory.mktemp(f"node{n}")
        out[f"gpu-node-0{n}"] = Path(build.materialize(f"dgx-h200-8x8@{n}", str(dest)))
    return out


def degrade(sysroot: Path, rdma_device: str, width: int = 8) -> str:
    """Train a NIC's PCIe link down to `width` lanes in the hardware tree; returns its BDF."""
    pci = (sysroot / "sys/class/infiniband" / rdma_device / "device").resolve()
    (pci / "current_link_width").write_text(f"{width}\n")
    return pci.name


def facts(sysroot: Path):
    return _topology.discover(str(sysroot))
