"""The storage backend registry (module_utils/storage) against every place that lists the backends: a
backend added to the registry but not to an argument spec (or the other way round) fails here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from storage_support import REPO

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import storage_backends as B
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY, by_csi_rank
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import StorageBackend

PACKAGE = "ansible_collections.gpufabric.rollout.plugins.module_utils.storage"
STORAGE_DIR = REPO / "plugins" / "module_utils" / "storage"


def spec_options(role: str, *path: str, entry: str = "main"):
    """The argument spec's option at ``path`` of the role's entry point."""
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    node = spec["argument_specs"][entry]
    for key in path:
        node = node["options"][key]
    return node


def test_every_backend_module_is_registered():
    files = sorted(p.stem for p in STORAGE_DIR.glob("*.py") if p.stem not in ("__init__", "base"))
    assert files == sorted(REGISTRY)
    for name in files:
        backend = importlib.import_module(f"{PACKAGE}.{name}").BACKEND
        assert isinstance(backend, StorageBackend) and backend.name == name and REGISTRY[name] is backend


def test_plan_spec_backend_choices_are_the_registry():
    assert spec_options("plan", "gpufabric_storage", "backend", entry="node_intent")["choices"] == list(REGISTRY)


def test_plan_spec_has_a_section_per_backend():
    options = spec_options("plan", "gpufabric_storage", entry="node_intent")["options"]
    assert [name for name in REGISTRY if name not in options] == []


def test_storage_csi_spec_has_a_driver_per_backend():
    assert sorted(spec_options("storage_csi", "storage_csi_drivers")["options"]) == sorted(REGISTRY)


def test_gpudirect_storage_spec_has_every_cufile_section():
    options = spec_options("gpudirect_storage", "gpudirect_storage_filesystems")["options"]
    sections = {b.cufile_section for b in REGISTRY.values() if b.cufile_section}
    assert sections <= set(options)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_backend_facts_are_complete(name):
    backend = REGISTRY[name]
    assert backend.csi_driver and backend.gdscheck_labels and backend.export_what
    assert backend.default_pods in ("storageclass", "static_pv")
    assert backend.dynamic or backend.default_pods == "static_pv"
    assert backend.csi_install in ("helm", "manifest")
    assert backend.csi_install == "helm" or backend.csi_manifest_what
    assert backend.host_mount == (backend.fstype is not None)


def test_tables_are_derived_from_the_registry():
    assert tuple(REGISTRY) == B.BACKENDS
    assert {n: b.default_pods for n, b in REGISTRY.items()} == B.DEFAULT_PODS
    assert len({b.csi_rank for b in by_csi_rank()}) == len(REGISTRY)


def test_storage_package_files_stay_small():
    for path in Path(STORAGE_DIR).glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path.name
