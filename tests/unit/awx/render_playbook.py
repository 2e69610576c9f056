"""Render every task of a playbook the way ansible-playbook would hand it to its module, without
running it: print JSON [{name, action, args}] for each task and loop item whose `when` holds.

Used by test_awx_playbook.py in a subprocess (Ansible's collection loader is process-wide).
Usage: render_playbook.py PLAYBOOK COLLECTIONS_PATH EXTRA_VARS_JSON
"""

from __future__ import annotations

import json
import os
import sys

from ansible import context
from ansible.executor.module_common import _apply_action_arg_defaults
from ansible.inventory.manager import InventoryManager
from ansible.module_utils.common.collections import ImmutableDict
from ansible.parsing.dataloader import DataLoader
from ansible.playbook import Playbook
from ansible.playbook.block import Block
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar
from ansible.vars.manager import VariableManager


def _tasks(blocks):
    for block in blocks:
        for item in block.block + block.rescue + block.always:
            if isinstance(item, Block):
                yield from _tasks([item])
            else:
                yield item


def _drop_omitted(value, omit_token):
    if isinstance(value, dict):
        return {k: _drop_omitted(v, omit_token) for k, v in value.items() if not _is_omit(v, omit_token)}
    if isinstance(value, list):
        return [_drop_omitted(v, omit_token) for v in value if not _is_omit(v, omit_token)]
    return value


def _is_omit(value, omit_token):
    return type(value).__name__ == "Omit" or (isinstance(value, str) and value == omit_token)


def main() -> None:
    playbook, collections_path, extra_vars = sys.argv[1], sys.argv[2], sys.argv[3]
    context.CLIARGS = ImmutableDict(tags=["all"], skip_tags=[], check=False, diff=False, extra_vars=(extra_vars,))
    init_plugin_loader([collections_path])
    loader = DataLoader()
    loader.set_basedir(os.path.dirname(os.path.abspath(playbook)))  # as ansible-playbook does
    inventory = InventoryManager(loader=loader, sources=["localhost,"])
    variables = VariableManager(loader=loader, inventory=inventory)
    host = inventory.get_host("localhost")
    out = []
    for play in Playbook.load(playbook, variable_manager=variables, loader=loader).get_plays():
        for task in _tasks(play.compile()):
            if task.action in ("ansible.builtin.meta", "meta"):
                continue
            task_vars = variables.get_vars(play=play, host=host, task=task)
            templar = Templar(loader=loader, variables=task_vars)
            items = templar.template(task.loop) if task.loop else [None]
            loop_var = task.loop_control.loop_var if task.loop_control else "item"
            for item in items:
                item_vars = dict(task_vars)
                if item is not None:
                    item_vars[loop_var] = item
                item_templar = Templar(loader=loader, variables=item_vars)
                if not all(item_templar._engine.evaluate_conditional(c) for c in task.when or []):
                    continue
                args = _drop_omitted(item_templar.template(task.args), task_vars.get("omit"))
                args = _apply_action_arg_defaults(task.resolved_action or task.action, task, args, item_templar)
                args = _drop_omitted(item_templar.template(args), task_vars.get("omit"))
                out.append({"name": task.get_name(), "action": task.resolved_action or task.action, "args": args})
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
