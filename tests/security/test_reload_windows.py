"""Every driver reload or reboot of the host roles happens inside a drained window: the task that
reboots or unloads sits in a block that first drains through roles/node_maintenance (after the
fail-closed resolve), and whose rescue keeps the node cordoned; playbooks/upgrade.yml, which drains
itself, tells the roles so (their *_k8s_drain: never)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def chains(tasks, parents=()):
    """(task, [enclosing blocks]) for every task, depth first."""
    for task in tasks or []:
        yield task, list(parents)
        for key in ("block", "rescue", "always"):
            if key in task:
                yield from chains(task[key], (*parents, task))


def includes(task, tasks_from=None):
    role = task.get("ansible.builtin.include_role") or {}
    return role.get("name") == "gpufabric.rollout.node_maintenance" and role.get("tasks_from") == tasks_from


def drained_window(path: Path, disruptive):
    tasks = yaml.safe_load(path.read_text())
    found = [(t, blocks) for t, blocks in chains(tasks) if disruptive(t)]
    assert found, f"{path}: no reload or reboot task found"
    for task, blocks in found:
        windows = [b for b in blocks if any(includes(t) for t in b.get("block") or [])]
        assert windows, f"{path}: {task['name']!r} runs outside a block that drains the node first"
        window = windows[-1]
        assert includes(window["block"][0]), f"{path}: the drain is not the first task of {window['name']!r}"
        assert any(includes(t, "hold") for t in window.get("rescue") or []), f"{window['name']!r} has no hold"
        top = tasks.index(blocks[0])
        assert any(includes(t, "resolve") for t in tasks[:top]), f"{path}: no fail-closed resolve before the window"


def test_gpu_drivers_unload_and_reboot_are_inside_a_drained_window():
    drained_window(
        REPO / "roles" / "gpu_driver" / "tasks" / "load.yml",
        lambda t: "ansible.builtin.reboot" in t or "modprobe', '-r'" in str(t.get("ansible.builtin.command")),
    )


def test_doca_ofeds_reload_is_inside_a_drained_window():
    drained_window(
        REPO / "roles" / "doca_ofed" / "tasks" / "activate.yml",
        lambda t: t.get("ansible.builtin.include_tasks") == "load.yml",
    )


@pytest.mark.parametrize(
    "role, variable", [("doca_ofed", "doca_ofed_k8s_drain"), ("gpu_driver", "gpu_driver_k8s_drain")]
)
def test_upgrade_drains_once_and_tells_the_roles(role, variable):
    plays = yaml.safe_load((REPO / "playbooks" / "upgrade.yml").read_text())
    calls = [
        t
        for p in plays
        for t, _parent in chains(p.get("tasks"))
        if (t.get("ansible.builtin.include_role") or {}).get("name") == f"gpufabric.rollout.{role}"
    ]
    assert calls and all(t["vars"].get(variable) == "never" for t in calls)
