"""report_file (plugins/action/report_file.py): the run's report written on the controller by the worker
itself, and the host layer's report of the run so far (playbooks/tasks/report_progress.yml) written with it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from role_runner import REPO, ansible_playbook

from ansible_collections.gpufabric.rollout.plugins.action import report_file


def test_mode_is_an_octal_string_and_anything_else_is_refused_naming_it():
    assert report_file.parse_mode("0644") == 0o644
    assert report_file.parse_mode("600") == 0o600
    for bad in ("rw-r--r--", "0899", "77777", ""):
        with pytest.raises(AnsibleActionFail, match=r"report_file: mode is .*octal permission string"):
            report_file.parse_mode(bad)


def test_the_file_is_replaced_whole_and_a_link_at_dest_is_replaced_not_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("not the report's\n")
    dest = tmp_path / "report.txt"
    dest.symlink_to(target)
    assert not report_file.current(str(dest), 0o644, b"report\n"), "a link is never the current file"

    report_file.replace(str(dest), 0o640, b"report\n")

    assert not dest.is_symlink() and dest.read_bytes() == b"report\n"
    assert oct(dest.stat().st_mode & 0o7777) == oct(0o640)
    assert target.read_text() == "not the report's\n", "the link's target is left alone"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.txt", "report.txt"], "no temporary file left"
    assert report_file.current(str(dest), 0o640, b"report\n")
    assert not report_file.current(str(dest), 0o644, b"report\n"), "another mode is a change"
    assert not report_file.current(str(dest), 0o640, b"report!\n"), "other content is a change"


def test_a_missing_folder_is_refused_naming_dest(tmp_path):
    with pytest.raises(AnsibleActionFail, match=r"the folder of dest .*missing.*does not exist on the controller"):
        report_file.replace(str(tmp_path / "missing" / "report.txt"), 0o644, b"x")


NODES = ["node-b", "node-a"]


def progress_play(report: Path) -> list:
    """Two nodes of a batch about to start roce, node-a with a section: the host layer's own report task."""
    sections = {"node-a": {"topology": "8 GPUs, 8 rails"}}
    return [
        {
            "name": "A batch of the host layer before roce",
            "hosts": "gpu_nodes",
            "gather_facts": False,
            "order": "sorted",
            "vars_files": [str(REPO / "playbooks" / "vars" / "report.yml")],
            "vars": {"gpufabric_report_path": str(report)},
            "tasks": [
                {"ansible.builtin.set_fact": {"__hosts_reached": True}},
                {
                    "ansible.builtin.set_fact": {"gpufabric_report_sections": sections["node-a"]},
                    "when": "inventory_hostname == 'node-a'",
                },
                {
                    "ansible.builtin.import_tasks": str(REPO / "playbooks" / "tasks" / "report_progress.yml"),
                    "vars": {"__report_step": "roce"},
                },
            ],
        }
    ]


def recap_of(out: str) -> dict:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", out, re.M)}


@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_the_progress_report_names_the_batch_in_progress_and_its_next_role(tmp_path, check):
    report = tmp_path / "out" / "rollout-report.txt"
    report.parent.mkdir()
    (tmp_path / "play.yml").write_text(yaml.safe_dump(progress_play(report), sort_keys=False))
    hosts = {n: {"ansible_connection": "local"} for n in NODES}
    inventory = {"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    args = ["-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")] + (["--check"] if check else [])

    done = ansible_playbook(tmp_path, *args, env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")})

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    text = report.read_text()
    assert oct(report.stat().st_mode & 0o777) == oct(0o644)
    # Both nodes, in inventory order, as in progress before roce; node-a's section, node-b has none.
    for node in NODES:
        block = text.split(f"== node {node} ==")[1].split("== node ")[0]
        assert "HOST LAYER IN PROGRESS when this report was written: next role roce." in block, text
        assert "became unreachable in roce" in block, text
    assert "--- topology ---\n8 GPUs, 8 rails" in text.split("== node node-a ==")[1]
    assert "(no sections: the node did not complete the host layer)" in text.split("== node node-b ==")[1]
    assert text.index("== node node-b ==") < text.index("== node node-a =="), "the inventory's order"
    assert recap_of(done.stdout) == {"node-a": 0, "node-b": 0}, "the report is not a managed file"
    # Written again with the same text, the file is left as it was.
    inode = os.stat(report).st_ino
    again = ansible_playbook(tmp_path, *args, env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")})
    assert again.returncode == 0 and os.stat(report).st_ino == inode and report.read_text() == text
