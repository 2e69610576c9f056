"""The warm_workers callback: workers inherit the collections and freeze what they inherit.

Each test runs Ansible (or Python) in a fresh process: the callback registers a fork hook, which
must not stay behind in the test process."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CALLBACKS = REPO / "lab" / "callback"
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
# What a new interpreter has frozen before anything runs (0 before Python 3.12).
FRESH_FREEZE_COUNT = int(
    subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_freeze_count())"], capture_output=True, text=True, check=True
    ).stdout
)

# An action plugin runs in the worker Ansible forks for the task: it reports what that worker
# started with.
PROBE_ACTION = """
import gc
import json
import sys

from ansible.plugins.action import ActionBase
from ansible.plugins.loader import filter_loader, test_loader


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        packages = sorted(m for m in sys.modules if m.startswith("ansible_collections.") and m.count(".") == 2)
        jinja = sorted(m for m in sys.modules if ".plugins.filter." in m or ".plugins.test." in m)
        with open(self._task.args["dest"], "w") as out:
            # The loaders' cache of builtin plugins (internal): filled once, it is not loaded again.
            builtin = {"filters": len(filter_loader._cached_non_collection_wrappers),
                       "tests": len(test_loader._cached_non_collection_wrappers)}
            report = {"frozen": gc.get_freeze_count(), "collections": packages, "jinja": jinja, "builtin": builtin}
            json.dump(report, out)
        return {"changed": False}
"""


def visible_collections():
    root = REPO / ".collections" / "ansible_collections"
    return sorted(f"ansible_collections.{ns.name}.{c.name}" for ns in root.iterdir() for c in ns.iterdir())


def probe_worker(tmp_path: Path, callbacks: str, collections_path: str = "") -> dict:
    (tmp_path / "action").mkdir()
    (tmp_path / "action" / "probe_worker.py").write_text(PROBE_ACTION)
    report = tmp_path / "worker.json"
    (tmp_path / "play.yml").write_text(
        textwrap.dedent(
            f"""\
            - hosts: localhost
              gather_facts: false
              tasks:
                - probe_worker:
                    dest: {report}
            """
        )
    )
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_ACTION_PLUGINS=str(tmp_path / "action"),
        ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS),
        ANSIBLE_CALLBACKS_ENABLED=callbacks,
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
    )
    if collections_path:
        env["ANSIBLE_COLLECTIONS_PATH"] = collections_path
    subprocess.run(
        [str(PLAYBOOK), "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml")],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(report.read_text())


@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "not-enabled"])
def test_the_worker_starts_with_every_collection_and_frozen_memory(tmp_path, enabled):
    callbacks = "ansible.posix.profile_tasks" + (",warm_workers" if enabled else "")
    worker = probe_worker(tmp_path, callbacks)
    collections = visible_collections()
    assert "ansible_collections.community.general" in collections  # one the play itself never loads
    # Filter files the play's one task never templates: this collection's and another's.
    filters = {
        "ansible_collections.gpufabric.rollout.plugins.filter.plan",
        "ansible_collections.community.general.plugins.filter.json_query",
    }
    if enabled:
        assert set(collections) <= set(worker["collections"])
        assert filters <= set(worker["jinja"])
        assert worker["builtin"]["filters"] > 100 and worker["builtin"]["tests"] > 50
        assert worker["frozen"] > FRESH_FREEZE_COUNT + 1000
    else:
        # What the callback changes: without it the worker inherits none of them.
        assert "ansible_collections.community.general" not in worker["collections"]
        assert not filters & set(worker["jinja"])
        assert worker["builtin"] == {"filters": 0, "tests": 0}
        assert worker["frozen"] == FRESH_FREEZE_COUNT


def test_a_broken_filter_file_leaves_the_others_loaded_and_the_play_running(tmp_path):
    # A collection of its own: a filter file that cannot be imported beside one that can. The broken
    # file fails only where a task uses it, as without the callback.
    filters = tmp_path / "colls" / "ansible_collections" / "probe" / "jinja" / "plugins" / "filter"
    filters.mkdir(parents=True)
    meta = "namespace: probe\nname: jinja\nversion: 1.0.0\nreadme: README.md\nauthors: [probe]\n"
    (filters.parents[1] / "galaxy.yml").write_text(meta)
    (filters / "broken.py").write_text("import a_module_that_is_not_installed\n")
    (filters / "fine.py").write_text("class FilterModule:\n    def filters(self):\n        return {'fine': str}\n")
    worker = probe_worker(tmp_path, "warm_workers", collections_path=f"{tmp_path / 'colls'}:{REPO / '.collections'}")
    assert "ansible_collections.probe.jinja.plugins.filter.fine" in worker["jinja"]
    assert "ansible_collections.probe.jinja.plugins.filter.broken" not in worker["jinja"]
    assert "ansible_collections.gpufabric.rollout.plugins.filter.plan" in worker["jinja"]


def call_in_fresh_python(call: str):
    """What warm_workers.<call> returns in a new Python whose plugin loader sees the checkout's collections."""
    probe = (
        "import json, sys\n"
        "from ansible.plugins.loader import init_plugin_loader\n"
        "init_plugin_loader([sys.argv[1]])\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "import warm_workers\n"
        f"print(json.dumps(warm_workers.{call}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(REPO / ".collections"), str(CALLBACKS)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_jinja_plugin_modules_names_each_filter_and_test_file():
    names = call_in_fresh_python("jinja_plugin_modules('ansible_collections.gpufabric.rollout')")
    files = sorted(
        f"ansible_collections.gpufabric.rollout.plugins.{kind}.{path.stem}"
        for kind in ("filter", "test")
        for path in (REPO / "plugins" / kind).glob("*.py")
        if path.stem != "__init__"
    )
    assert files and names == files


FORK_PROBE = """
import gc, os, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
sys.path.insert(0, sys.argv[2])
import warm_workers
warm_workers.register_fork_hook()
warm_workers.register_fork_hook()  # a second call (another callback instance) must not fail
before = gc.get_freeze_count()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, str(gc.get_freeze_count()).encode())
    os._exit(0)
os.close(w)
child = int(os.read(r, 64))
os.waitpid(pid, 0)
print(before, child, gc.get_freeze_count())
"""


def test_only_the_child_freezes_and_the_controller_keeps_collecting():
    out = subprocess.run(
        [sys.executable, "-c", FORK_PROBE, str(REPO / ".collections"), str(CALLBACKS)],
        capture_output=True,
        text=True,
        check=True,
    )
    before, child, after = map(int, out.stdout.split())
    # Python 3.12+ starts with some objects in the permanent generation; the controller adds none.
    assert before == after == FRESH_FREEZE_COUNT
    assert child > before + 1000


def test_collection_packages_names_each_visible_collection_once():
    # ansible-core's own internal collections are visible too: any extra entry must be one of them.
    packages = call_in_fresh_python("collection_packages()")
    assert len(packages) == len(set(packages))
    assert set(visible_collections()) <= set(packages)
    assert {p for p in packages if p not in visible_collections()} <= {"ansible_collections.ansible._protomatter"}
