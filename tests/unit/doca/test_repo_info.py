"""doca_repo_info reads a repository's index the way apt or dnf would; a repository directory
without an index is refused naming the variable that points at it (the plan reads the DOCA and the
GPU driver repositories with it before anything changes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.modules.doca_repo_info import read_index

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def params(url, variable="doca_ofed_repo_base_url", fmt="apt"):
    return {"url": url, "format": fmt, "validate_certs": True, "timeout": 5, "variable": variable}


def test_a_flat_apt_repository_is_read(tmp_path):
    shutil.copy(FIXTURES / "Packages", tmp_path / "Packages")
    url, packages, depends = read_index(params(tmp_path.as_uri() + "/"))
    assert url.endswith("/Packages")
    assert "doca-ofed" in packages and depends["doca-ofed"]


@pytest.mark.parametrize(
    "variable, fmt, missing",
    [
        ("doca_ofed_repo_base_url", "apt", "no Packages index at"),
        ("gpu_driver_repo_url", "apt", "no Packages index at"),
        ("doca_ofed_repo_base_url", "dnf", "no repodata/repomd.xml at"),
    ],
)
def test_a_repository_without_an_index_is_refused_naming_the_variable(tmp_path, variable, fmt, missing):
    release = tmp_path / "3.0.0"
    release.mkdir()
    with pytest.raises(_doca.DocaError) as refused:
        read_index(params(release.as_uri(), variable, fmt))
    assert str(refused.value).startswith(f"{variable}: {missing} {release.as_uri()}/")
