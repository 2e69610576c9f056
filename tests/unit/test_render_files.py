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


def chart(root, version, extra=None):
    """A verified chart as render mode stages it: the unpacked chart, its archive, provenance and digest."""
    root.mkdir(parents=True)
    (root / "demo" / "templates").mkdir(parents=True)
    (root / "demo" / "Chart.yaml").write_text(f"name: demo\nversion: {version}\n")
    (root / "demo" / "templates" / "cm.yaml").write_text("kind: ConfigMap\n")
    for name, text in (extra or {}).items():
        (root / "demo" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "demo" / name).write_text(text)
    (root / f"demo-{version}.tgz").write_bytes(b"\x1f\x8b\x08\x00" + version.encode())
    (root / f"demo-{version}.tgz.prov").write_text(f"signed {version}\n")
    (root / f"demo-{version}.tgz.sha256").write_text(f"abc  demo-{version}.tgz\n")
    return root


def tree_files(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_a_tree_is_copied_under_its_directory_and_a_second_run_writes_nothing(tmp_path, capsys):
    src = chart(tmp_path / "stage", "0.1.0")
    out = tmp_path / "render"
    args = dict(planned(out), trees=[{"dir": "charts", "src": str(src)}])

    code, result = run(capsys, args)

    assert code == 0 and result["changed"] is True
    assert result["written"][:3] == ["rail0-nad.yaml", "rail0-pool.yaml", "kustomization.yaml"]
    assert result["written"][3:] == [
        "charts/demo-0.1.0.tgz",
        "charts/demo-0.1.0.tgz.prov",
        "charts/demo-0.1.0.tgz.sha256",
        "charts/demo/Chart.yaml",
        "charts/demo/templates/cm.yaml",
    ]
    assert (out / "charts" / "demo-0.1.0.tgz").read_bytes() == (src / "demo-0.1.0.tgz").read_bytes()
    assert (out / "charts" / "demo" / "Chart.yaml").read_text() == "name: demo\nversion: 0.1.0\n"
    assert (out / "charts" / "demo" / "templates").stat().st_mode & 0o777 == 0o755

    code, result = run(capsys, args)
    assert code == 0 and result["changed"] is False and result["written"] == [] and result["removed"] == []


def test_a_new_chart_version_replaces_the_old_one_and_its_files_are_pruned(tmp_path, capsys):
    out = tmp_path / "render"
    old = chart(tmp_path / "old", "0.1.0", extra={"templates/gone/only-old.yaml": "kind: Secret\n"})
    run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(old)}]))
    (out / "charts" / "notes.txt").write_text("left by hand under the chart home\n")
    new = chart(tmp_path / "new", "0.2.0")

    code, result = run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(new)}]))

    assert code == 0 and result["changed"] is True
    assert result["written"] == [
        "charts/demo-0.2.0.tgz",
        "charts/demo-0.2.0.tgz.prov",
        "charts/demo-0.2.0.tgz.sha256",
        "charts/demo/Chart.yaml",
    ]
    assert result["removed"] == [
        "charts/demo-0.1.0.tgz",
        "charts/demo-0.1.0.tgz.prov",
        "charts/demo-0.1.0.tgz.sha256",
        "charts/demo/templates/gone/only-old.yaml",
        "charts/notes.txt",
        "charts/demo/templates/gone/",
    ]
    assert tree_files(out / "charts") == [
        "demo-0.2.0.tgz",
        "demo-0.2.0.tgz.prov",
        "demo-0.2.0.tgz.sha256",
        "demo/Chart.yaml",
        "demo/templates/cm.yaml",
    ]
    assert not (out / "charts" / "demo" / "templates" / "gone").exists()
    assert (out / "charts" / "demo" / "Chart.yaml").read_text() == "name: demo\nversion: 0.2.0\n"


def test_trees_in_check_mode_report_the_version_change_and_change_nothing(tmp_path, capsys):
    out = tmp_path / "render"
    run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(chart(tmp_path / "old", "0.1.0"))}]))
    before = tree_files(out)
    new = chart(tmp_path / "new", "0.2.0")

    code, result = run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(new)}]), check=True, diff=True)

    assert code == 0 and result["changed"] is True
    assert "charts/demo-0.2.0.tgz" in result["written"] and "charts/demo-0.1.0.tgz" in result["removed"]
    archive = next(d for d in result["diff"] if d["after_header"].endswith("charts/demo-0.2.0.tgz"))
    assert archive["after"] == "(not text: 9 bytes)\n"
    assert tree_files(out) == before


def test_without_trees_or_prune_the_chart_home_is_left_alone(tmp_path, capsys):
    out = tmp_path / "render"
    run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(chart(tmp_path / "old", "0.1.0"))}]))
    before = tree_files(out)
    new = chart(tmp_path / "new", "0.2.0")

    code, result = run(capsys, planned(out))
    assert code == 0 and result["changed"] is False and tree_files(out) == before

    code, result = run(capsys, dict(planned(out), prune=False, trees=[{"dir": "charts", "src": str(new)}]))
    assert code == 0 and result["removed"] == [] and "charts/demo-0.1.0.tgz" in tree_files(out)


def test_two_sources_share_a_directory(tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "a").mkdir(parents=True)
    (two / "b").mkdir(parents=True)
    (one / "a" / "Chart.yaml").write_text("name: a\n")
    (two / "b" / "Chart.yaml").write_text("name: b\n")
    out = tmp_path / "render"
    trees = [{"dir": "charts", "src": str(one)}, {"dir": "charts", "src": str(two)}]

    code, result = run(capsys, dict(planned(out), trees=trees))

    assert code == 0 and tree_files(out / "charts") == ["a/Chart.yaml", "b/Chart.yaml"]
    code, result = run(capsys, dict(planned(out), trees=trees[1:]))
    assert result["removed"] == ["charts/a/Chart.yaml", "charts/a/"] and tree_files(out / "charts") == ["b/Chart.yaml"]


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ("../escape", "trees dir '../escape' is not a directory relative to path"),
        ("/abs", "trees dir '/abs' is not a directory relative to path"),
        ("kustomization.yaml", "kustomization.yaml is both a file and a tree's directory"),
        ("twice", "twice/Chart.yaml is in two trees' sources"),
        ("nested", "trees dir nested/inner is inside trees dir nested"),
    ],
)
def test_a_bad_tree_is_refused_before_any_write(tmp_path, capsys, tree, message):
    src = tmp_path / "src"
    src.mkdir()
    (src / "Chart.yaml").write_text("name: x\n")
    trees = [{"dir": tree, "src": str(src)}]
    if tree in ("twice", "nested"):
        trees.append({"dir": "twice" if tree == "twice" else "nested/inner", "src": str(src)})

    code, result = run(capsys, dict(planned(tmp_path / "out"), trees=trees))

    assert code == 1 and message in result["msg"]
    assert not (tmp_path / "out").exists()


def test_a_symlink_in_a_source_or_in_place_of_the_chart_home_is_refused(tmp_path, capsys):
    src = chart(tmp_path / "src", "0.1.0")
    (src / "demo" / "link.yaml").symlink_to("/etc/passwd")
    code, result = run(capsys, dict(planned(tmp_path / "out"), trees=[{"dir": "charts", "src": str(src)}]))
    assert code == 1 and "link.yaml is not a plain file or directory" in result["msg"]

    (src / "demo" / "link.yaml").unlink()
    out = tmp_path / "out2"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "charts").symlink_to(elsewhere)
    code, result = run(capsys, dict(planned(out), trees=[{"dir": "charts", "src": str(src)}]))
    assert code == 1 and f"{out / 'charts'} exists and is not a directory" in result["msg"]
    assert list(elsewhere.iterdir()) == [], "nothing written through the link"
