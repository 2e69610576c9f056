"""doca_repo_info on file:// repositories built from the fixtures: it reads them, and a malformed
index fails with one message naming the index URL and the offending line."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from urllib.error import URLError

import pytest
from module_support import run_module

from ansible_collections.gpufabric.rollout.plugins.modules import doca_repo_info

FIXTURES = Path(__file__).parent / "fixtures"


def apt_repo(root, packages):
    root.mkdir()
    (root / "Packages.gz").write_bytes(gzip.compress(packages.encode()))
    return f"file://{root}/"


def dnf_repo(root, primary):
    (root / "repodata").mkdir(parents=True)
    shutil.copy(FIXTURES / "repodata/repomd.xml", root / "repodata/repomd.xml")
    (root / "repodata/2222-primary.xml.gz").write_bytes(gzip.compress(primary.encode()))
    return f"file://{root}/"


def test_reads_an_apt_repository(tmp_path, monkeypatch, capsys):
    url = apt_repo(tmp_path / "apt", (FIXTURES / "Packages").read_text())
    code, out = run_module(doca_repo_info, {"url": url}, monkeypatch, capsys)
    assert code == 0, out
    assert out["url"] == url + "Packages.gz"
    assert out["packages"]["doca-ofed"] == ["2.9.1-0.1.4", "2.9.2-0.1.8"]


def test_bad_version_in_packages_names_index_and_line(tmp_path, monkeypatch, capsys):
    text = (FIXTURES / "Packages").read_text().replace("Version: 2.9.2-0.1.8", "Version: abc:2.9.2-0.1.8", 1)
    url = apt_repo(tmp_path / "apt", text)
    lineno = text.splitlines().index("Version: abc:2.9.2-0.1.8") + 1
    code, out = run_module(doca_repo_info, {"url": url}, monkeypatch, capsys)
    assert code == 1 and "Traceback" not in json.dumps(out)
    assert out["msg"] == (
        f"{url}Packages.gz: version 'abc:2.9.2-0.1.8': epoch: 'abc' is not an integer "
        f"(line {lineno}: 'Version: abc:2.9.2-0.1.8')"
    )


def test_malformed_primary_xml_names_metadata_and_line(tmp_path, monkeypatch, capsys):
    text = (FIXTURES / "repodata/primary.xml").read_text()
    broken = text.replace("</package>", "</packag>", 1)
    lineno = broken.splitlines().index(next(ln for ln in broken.splitlines() if "</packag>" in ln)) + 1
    url = dnf_repo(tmp_path / "dnf", broken)
    code, out = run_module(doca_repo_info, {"url": url, "format": "dnf"}, monkeypatch, capsys)
    assert code == 1 and "Traceback" not in json.dumps(out)
    assert out["msg"].startswith(
        f"{url}repodata/2222-primary.xml.gz: primary.xml is not well-formed XML (mismatched tag"
    )
    assert out["msg"].endswith(f"(line {lineno}: '{broken.splitlines()[lineno - 1]}')")


def _unreachable(url, params):
    raise URLError(OSError(-3, "Temporary failure in name resolution"))


@pytest.mark.parametrize(
    "args, variable, off",
    [
        ({}, "doca_ofed_repo_base_url", "gpufabric_doca_ofed_enabled: false"),
        (
            {"variable": "gpu_driver_repo_url", "off_setting": "gpufabric_gpu_driver.packages: []"},
            "gpu_driver_repo_url",
            "gpufabric_gpu_driver.packages: []",
        ),
    ],
)
def test_an_unreachable_repository_names_the_mirror_and_the_off_variables(args, variable, off, monkeypatch, capsys):
    """An air-gapped node (no DNS): the error says which variable points at a mirror and what turns the layer off."""
    monkeypatch.setattr(doca_repo_info, "_fetch", _unreachable)
    url = "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/"
    code, out = run_module(doca_repo_info, {"url": url, **args}, monkeypatch, capsys)
    assert code == 1
    assert out["msg"].startswith(f"cannot read the repository index under {url}: ")
    assert "Temporary failure in name resolution" in out["msg"]
    assert out["msg"].endswith(
        f"; point {variable} at a reachable mirror of the repository (an air-gapped site), or set {off}"
    )


def test_a_repository_without_an_index_names_the_mirror_and_the_off_variables(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    code, out = run_module(doca_repo_info, {"url": f"file://{tmp_path}/empty/"}, monkeypatch, capsys)
    assert code == 1
    assert out["msg"].startswith("doca_ofed_repo_base_url: no Packages index at ")
    assert "or set gpufabric_doca_ofed_enabled: false" in out["msg"]
