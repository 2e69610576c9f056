"""Module host_files: a role's directories and whole files made exactly as given, in one call."""

import grp
import json
import os
import pwd

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.modules import host_files

OWNER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def run(capsys, args, check=False, diff=False):
    args = dict(args, owner=OWNER, group=GROUP, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        host_files.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def planned(root):
    lib = root / "lib" / "pkg"
    return {
        "directories": [str(root / "etc"), str(lib)],
        "files": [
            {"path": str(root / "etc" / "plan.json"), "content": '{"mtu": 9000}\n'},
            {"path": str(lib / "__init__.py"), "content": ""},
            {"path": str(lib / "apply.py"), "content": "print('apply')\n", "mode": "0755"},
        ],
    }


def mode(path):
    return path.stat().st_mode & 0o7777


def test_directories_with_their_parents_and_files_are_made_as_given(tmp_path, capsys):
    code, result = run(capsys, planned(tmp_path))

    assert code == 0 and result["changed"] is True
    assert result["changed_paths"] == [
        str(tmp_path / "etc"),
        str(tmp_path / "lib" / "pkg"),
        str(tmp_path / "etc" / "plan.json"),
        str(tmp_path / "lib" / "pkg" / "__init__.py"),
        str(tmp_path / "lib" / "pkg" / "apply.py"),
    ]
    assert (tmp_path / "etc" / "plan.json").read_text() == '{"mtu": 9000}\n'
    assert (tmp_path / "lib" / "pkg" / "__init__.py").read_text() == ""
    assert mode(tmp_path / "etc") == 0o755 and mode(tmp_path / "lib" / "pkg") == 0o755
    assert mode(tmp_path / "etc" / "plan.json") == 0o644
    assert mode(tmp_path / "lib" / "pkg" / "apply.py") == 0o755
    assert sorted(os.listdir(tmp_path / "etc")) == ["plan.json"], "no temporary file left"


def test_a_second_run_changes_nothing_and_rewrites_nothing(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}

    code, result = run(capsys, planned(tmp_path), diff=True)

    assert code == 0 and result["changed"] is False and result["changed_paths"] == [] and result["diff"] == []
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == stamps


def test_only_what_differs_is_changed_text_or_mode(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    (tmp_path / "etc" / "plan.json").write_text('{"mtu": 1500}\n')
    (tmp_path / "lib" / "pkg" / "apply.py").chmod(0o600)
    (tmp_path / "etc").chmod(0o700)
    untouched = (tmp_path / "lib" / "pkg" / "__init__.py").stat().st_mtime_ns

    code, result = run(capsys, planned(tmp_path), diff=True)

    assert code == 0 and result["changed"] is True
    assert result["changed_paths"] == [
        str(tmp_path / "etc"),
        str(tmp_path / "etc" / "plan.json"),
        str(tmp_path / "lib" / "pkg" / "apply.py"),
    ]
    assert (tmp_path / "etc" / "plan.json").read_text() == '{"mtu": 9000}\n'
    assert mode(tmp_path / "lib" / "pkg" / "apply.py") == 0o755 and mode(tmp_path / "etc") == 0o755
    assert (tmp_path / "lib" / "pkg" / "__init__.py").stat().st_mtime_ns == untouched
    texts = [d for d in result["diff"] if "before_header" in d]
    assert [(d["before"], d["after"]) for d in texts] == [('{"mtu": 1500}\n', '{"mtu": 9000}\n')]
    modes = [(d["before"].get("mode"), d["after"].get("mode")) for d in result["diff"] if "before_header" not in d]
    assert modes == [("0700", "0755"), ("0600", "0755")]


def test_check_mode_reports_every_change_and_changes_nothing(tmp_path, capsys):
    run(capsys, planned(tmp_path))
    (tmp_path / "etc" / "plan.json").write_text("old\n")
    (tmp_path / "lib" / "pkg" / "apply.py").chmod(0o600)
    fresh = dict(planned(tmp_path))
    fresh["directories"] = fresh["directories"] + [str(tmp_path / "new")]
    fresh["files"] = fresh["files"] + [{"path": str(tmp_path / "new" / "unit.service"), "content": "[Unit]\n"}]

    code, result = run(capsys, fresh, check=True, diff=True)

    assert code == 0 and result["changed"] is True
    assert result["changed_paths"] == [
        str(tmp_path / "new"),
        str(tmp_path / "etc" / "plan.json"),
        str(tmp_path / "lib" / "pkg" / "apply.py"),
        str(tmp_path / "new" / "unit.service"),
    ]
    assert (tmp_path / "etc" / "plan.json").read_text() == "old\n"
    assert mode(tmp_path / "lib" / "pkg" / "apply.py") == 0o600
    assert not (tmp_path / "new").exists()
    assert {
        "before_header": f"{tmp_path}/new/unit.service (absent)",
        "after_header": f"{tmp_path}/new/unit.service",
        "before": "",
        "after": "[Unit]\n",
    } in result["diff"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a, r: a["files"].append({"path": "rel.conf", "content": ""}), "'rel.conf' is not an absolute"),
        (lambda a, r: a["files"].append(dict(a["files"][0])), "plan.json is given twice"),
        (lambda a, r: a["directories"].append(str(r / "etc") + "/"), "etc is given twice"),
        (
            lambda a, r: a["files"].append({"path": str(r / "nowhere" / "x.conf"), "content": ""}),
            "add {r}/nowhere to directories",
        ),
        (lambda a, r: a["files"][0].update(mode="rw-r--r--"), "'rw-r--r--' is not an octal mode"),
        (lambda a, r: a.update(directory_mode="755x"), "directory_mode '755x' is not an octal mode"),
    ],
)
def test_bad_input_is_refused_before_anything_changes(tmp_path, capsys, change, message):
    args = planned(tmp_path)
    change(args, tmp_path)

    code, result = run(capsys, args)

    assert code == 1 and result["failed"] is True and message.format(r=tmp_path) in result["msg"]
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_is_a_file_or_a_file_that_is_a_directory_is_refused(tmp_path, capsys):
    (tmp_path / "lib").write_text("a file\n")
    code, result = run(capsys, planned(tmp_path))
    assert code == 1 and f"{tmp_path}/lib/pkg cannot be made: {tmp_path}/lib is not a directory" in result["msg"]
    assert not (tmp_path / "etc").exists(), "refused before the other directories were made"

    (tmp_path / "lib").unlink()
    (tmp_path / "etc" / "plan.json").mkdir(parents=True)
    code, result = run(capsys, planned(tmp_path))
    assert code == 1 and f"{tmp_path}/etc/plan.json is a directory, not a file" in result["msg"]
    assert not (tmp_path / "lib").exists(), "refused before the other directories were made"

    (tmp_path / "etc" / "plan.json").rmdir()
    (tmp_path / "etc").rmdir()
    (tmp_path / "etc").write_text("a file\n")
    code, result = run(capsys, planned(tmp_path))
    assert code == 1 and f"{tmp_path}/etc exists and is not a directory" in result["msg"]
    assert not (tmp_path / "lib").exists()
