"""Module render_files: a render directory made exactly the planned set of files in one call."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.gpufabric.rollout.plugins.modules import render_files

NAD = {
    "apiVersion": "k8s.cni.cncf.io/v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": {"name": "rail0", "namespace": "gpu"},
    "spec": {"config": '{"cniVersion": "1.0.0",\n "type": "macvlan"}'},
}
POOL = {"kind": "IPPool", "metadata": {"name": "rail0"}, "spec": {"subnet": "10.0.0.0/24", "gateway": "10.0.0.1"}}


def run(capsys, args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        render_files.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def planned(path):
    return {
        "path": str(path),
        "objects": [{"file": "rail0-nad.yaml", "object": NAD}, {"file": "rail0-pool.yaml", "object": POOL}],
        "files": [{"file": "kustomization.yaml", "content": "resources:\n- rail0-nad.yaml\n- rail0-pool.yaml\n"}],
    }


def test_objects_are_written_as_to_nice_yaml_writes_them_and_texts_as_given(tmp_path, capsys):
    out = tmp_path / "render" / "rdma_networks"
    code, result = run(capsys, planned(out))

    assert code == 0 and result["changed"] is True
    assert result["written"] == ["rail0-nad.yaml", "rail0-pool.yaml", "kustomization.yaml"]
    assert (out / "rail0-nad.yaml").read_text() == to_nice_yaml(NAD, indent=2, sort_keys=False)
    assert (out / "rail0-pool.yaml").read_text() == to_nice_yaml(POOL, indent=2, sort_keys=False)
    assert (out / "kustomization.yaml").read_text() == "resources:\n- rail0-nad.yaml\n- rail0-pool.yaml\n"
    assert {oct(p.stat().st_mode & 0o777) for p in out.iterdir()} == {"0o644"}
    assert sorted(os.listdir(out)) == ["kustomization.yaml", "rail0-nad.yaml", "rail0-pool.yaml"], "no temporary left"


def test_a_second_run_writes_nothing(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}

    code, result = run(capsys, planned(tmp_path))

    assert code == 0 and result["changed"] is False and result["written"] == [] and result["removed"] == []
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps


def test_only_what_differs_is_rewritten_and_stale_yaml_is_pruned(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    (tmp_path / "rail0-pool.yaml").write_text("edited by hand\n")
    (tmp_path / "kustomization.yaml").chmod(0o600)
    (tmp_path / "rail7-nad.yaml").write_text("kind: NetworkAttachmentDefinition\n")
    (tmp_path / "README.md").write_text("kept: not a rendered kind of file\n")

    code, result = run(capsys, planned(tmp_path))

    assert code == 0 and result["changed"] is True
    assert result["written"] == ["rail0-pool.yaml", "kustomization.yaml"]
    assert result["removed"] == ["rail7-nad.yaml"]
    assert sorted(os.listdir(tmp_path)) == ["README.md", "kustomization.yaml", "rail0-nad.yaml", "rail0-pool.yaml"]
    assert (tmp_path / "kustomization.yaml").stat().st_mode & 0o777 == 0o644


def test_without_prune_stale_files_stay(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    (tmp_path / "rail7-nad.yaml").write_text("kind: NetworkAttachmentDefinition\n")

    code, result = run(capsys, dict(planned(tmp_path), prune=False))

    assert code == 0 and result["changed"] is False and result["removed"] == []
    assert (tmp_path / "rail7-nad.yaml").exists()


def test_check_mode_reports_and_diff_shows_each_file_but_nothing_changes(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    (tmp_path / "rail0-pool.yaml").write_text("old\n")
    (tmp_path / "rail7-nad.yaml").write_text("stale\n")
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}

    code, result = run(capsys, planned(tmp_path), check=True, diff=True)

    assert code == 0 and result["changed"] is True
    assert result["written"] == ["rail0-pool.yaml"] and result["removed"] == ["rail7-nad.yaml"]
    assert [(d["before"], d["after"]) for d in result["diff"]] == [
        ("old\n", to_nice_yaml(POOL, indent=2, sort_keys=False)),
        ("stale\n", ""),
    ]
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_check_mode_on_a_missing_directory_creates_nothing(tmp_path, capsys):
    code, result = run(capsys, planned(tmp_path / "absent"), check=True)

    assert code == 0 and result["changed"] is True and len(result["written"]) == 3
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../escape.yaml", "'../escape.yaml' is not a file name"),
        ("sub/dir.yaml", "'sub/dir.yaml' is not a file name"),
        ("", "'' is not a file name"),
        ("kustomization.yaml", "kustomization.yaml is given twice"),
    ],
)
def test_a_bad_or_repeated_file_name_is_refused_before_any_write(tmp_path, capsys, name, message):
    args = planned(tmp_path / "out")
    args["objects"].append({"file": name, "object": POOL})

    code, result = run(capsys, args)

    assert code == 1 and result["failed"] is True and message in result["msg"]
    assert not (tmp_path / "out").exists()


def test_a_path_that_is_a_file_or_a_bad_mode_is_refused(tmp_path, capsys):
    (tmp_path / "plain").write_text("x")

    code, result = run(capsys, planned(tmp_path / "plain"))
    assert code == 1 and "exists and is not a directory" in result["msg"]

    code, result = run(capsys, dict(planned(tmp_path / "out"), mode="rw-r--r--"))
    assert code == 1 and "'rw-r--r--' is not an octal mode" in result["msg"]
    assert not (tmp_path / "out").exists()


def test_a_directory_with_a_planned_file_name_is_refused_before_any_write(tmp_path, capsys):
    (tmp_path / "rail0-pool.yaml").mkdir()

    code, result = run(capsys, planned(tmp_path))

    assert code == 1 and result["failed"] is True
    assert result["msg"] == (
        f"render_files: {tmp_path / 'rail0-pool.yaml'} exists and is not a file; move it away, or render elsewhere"
    )
    assert "exception" not in result
    assert sorted(os.listdir(tmp_path)) == ["rail0-pool.yaml"], "nothing written"


def test_a_directory_it_cannot_write_fails_with_the_reason(tmp_path, capsys, monkeypatch):
    if os.geteuid() == 0:
        # root writes through directory modes (and the temporary names are mkstemp's, nothing can be put in
        # their place): the temporary file's creation fails as in a directory root cannot write
        def refused(path):
            raise PermissionError(13, "Permission denied", os.path.dirname(path))

        monkeypatch.setattr(render_files._atomic_file, "temporary_beside", refused)
    else:
        tmp_path.chmod(0o555)

    code, result = run(capsys, planned(tmp_path))

    assert code == 1 and result["failed"] is True
    assert result["msg"].startswith(f"render_files: cannot write {tmp_path}: ")
    assert "exception" not in result
