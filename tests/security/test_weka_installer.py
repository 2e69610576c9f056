"""Finding 1: the WEKA agent installer, run as root, was downloaded to a fixed shared path
(/var/tmp/gpufabric-weka-agent-install) with no checksum. A local user who plants a file there with a
future mtime gets it kept: get_url sends If-Modified-Since with the file's mtime, the server answers
304 Not Modified and get_url exits without replacing the file or applying owner and mode; then
`sh` runs the planted file as uid 0.

The attack is replayed with the role's own tasks on localhost against an HTTP server that honours
If-Modified-Since (Python's http.server does, since 3.7). The old path is pointed into the test's
directory (the old tasks read it from __storage_client_weka_installer), and a file is planted there.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from storage_support import PLAN, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "roles" / "storage_client" / "tasks"
LAB_INSTALLER = REPO / "lab" / "storage" / "weka-install"
GENUINE = "#!/bin/sh\necho genuine > {marker}\n"
PLANTED = "#!/bin/sh\necho planted > {marker}\n"


def weka_tasks():
    """The role's WEKA installer tasks (tasks/weka.yml; before the fix, the block in install.yml),
    without the weka-agent service task, which needs the agent this test does not install."""
    path = TASKS / "weka.yml"
    if path.exists():
        tasks = yaml.safe_load(path.read_text())
    else:
        blocks = yaml.safe_load((TASKS / "install.yml").read_text())
        tasks = next(t["block"] for t in blocks if "WEKA agent" in t.get("name", "") and "block" in t)
    return [t for t in tasks if "ansible.builtin.systemd_service" not in t]


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "served"
    (root / "dist" / "v1").mkdir(parents=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.log_message = lambda *args: None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root / "dist" / "v1" / "install", f"http://127.0.0.1:{httpd.server_address[1]}/dist/v1/install"
    httpd.shutdown()


def run_tasks(tmp_path: Path, variables) -> subprocess.CompletedProcess:
    (tmp_path / "weka.yml").write_text(yaml.safe_dump(weka_tasks()))
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [{"ansible.builtin.include_tasks": str(tmp_path / "weka.yml")}],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(variables))
    (tmp_path / "ansible-tmp").mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    env["TMPDIR"] = str(tmp_path / "ansible-tmp")
    env.pop("ANSIBLE_CONFIG", None)
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-e",
            "@vars.yml",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "play.yml",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.skipif(os.geteuid() != 0 or Path("/usr/bin/weka").exists(), reason="the tasks chown to root")
def test_a_planted_installer_is_never_run(tmp_path, server):
    served, url = server
    marker = tmp_path / "ran"
    genuine = GENUINE.format(marker=marker)
    served.write_text(genuine)
    planted = tmp_path / "gpufabric-weka-agent-install"
    planted.write_text(PLANTED.format(marker=marker))
    planted.chmod(0o666)
    future = time.time() + 86400
    os.utime(planted, (future, future))
    done = run_tasks(
        tmp_path,
        {
            "__storage_client_weka_installer": str(planted),  # where the old tasks put the installer
            "storage_client_weka_installer_url": url,
            "storage_client_weka_installer_sha256": digest(genuine),
            "storage_client_weka_validate_certs": False,
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert marker.read_text().strip() == "genuine", "the planted file ran as root"
    assert not list((tmp_path / "ansible-tmp").glob("gpufabric-weka.*")), "the installer's directory was left"


@pytest.mark.skipif(os.geteuid() != 0 or Path("/usr/bin/weka").exists(), reason="the tasks chown to root")
def test_an_installer_that_does_not_match_the_checksum_is_not_run(tmp_path, server):
    served, url = server
    marker = tmp_path / "ran"
    served.write_text(PLANTED.format(marker=marker))  # the server (or a man in the middle) serves another file
    done = run_tasks(
        tmp_path,
        {
            "storage_client_weka_installer_url": url,
            "storage_client_weka_installer_sha256": digest(GENUINE.format(marker=marker)),
            "storage_client_weka_validate_certs": False,
        },
    )
    assert done.returncode != 0
    assert "checksum" in done.stdout.lower()
    assert not marker.exists(), "an installer that does not match the pinned SHA-256 ran"
    assert not list((tmp_path / "ansible-tmp").glob("gpufabric-weka.*")), "the installer's directory was left"


def walk(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from walk(task.get(key) or [])


def test_the_tasks_use_no_fixed_path_and_verify_the_installer():
    text = yaml.safe_dump(weka_tasks()) + (REPO / "roles" / "storage_client" / "vars" / "main.yml").read_text()
    assert "/var/tmp" not in text and "/tmp/" not in text
    tasks = list(walk(weka_tasks()))
    get_url = [t["ansible.builtin.get_url"] for t in tasks if "ansible.builtin.get_url" in t]
    assert get_url and all(g.get("checksum", "").startswith("sha256:") for g in get_url)
    assert any(t.get("ansible.builtin.tempfile", {}).get("state") == "directory" for t in tasks)
    cleanup = [
        t
        for t in weka_tasks()
        for c in t.get("always") or []
        if c.get("ansible.builtin.file", {}).get("state") == "absent"
    ]
    assert cleanup, "the installer's directory is removed in an always: section"


def refused(**changes):
    values, problems = PLAN.check(PLAN.load_specs(str(REPO)), "node", lab_variables(**changes))
    assert problems == []
    with pytest.raises(_plan_node.PlanError) as error:
        _plan_node.plan_node(values, node_facts(1))
    return error.value.problems


def test_the_plan_requires_the_installer_checksum():
    variables = lab_variables()
    variables.pop("storage_client_weka_installer_sha256", None)
    values, problems = PLAN.check(PLAN.load_specs(str(REPO)), "node", variables)
    assert problems == []
    with pytest.raises(_plan_node.PlanError) as error:
        _plan_node.plan_node(values, node_facts(1))
    lines = [p for p in error.value.problems if p.startswith("storage_client_weka_installer_sha256:")]
    assert lines and "storage_client_weka_installer_url" in lines[0] and "64 hexadecimal digits" in lines[0]


@pytest.mark.parametrize("bad", ["abc", "sha256:" + "0" * 64, "0" * 63, "0" * 64 + "\n", "g" * 64])
def test_the_plan_refuses_a_malformed_checksum(bad):
    problems = refused(storage_client_weka_installer_sha256=bad)
    assert any(p.startswith("storage_client_weka_installer_sha256:") and "not a SHA-256" in p for p in problems)


def test_the_lab_pins_its_installer_stand_in():
    import hashlib

    pinned = lab_variables()["storage_client_weka_installer_sha256"]
    assert pinned == hashlib.sha256(LAB_INSTALLER.read_bytes()).hexdigest()
