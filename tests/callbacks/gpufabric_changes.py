# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: append every task result's (host, task, changed) to a JSON-lines file.

Enabled by the molecule scenarios (ANSIBLE_CALLBACK_PLUGINS + ANSIBLE_CALLBACKS_ENABLED) so that a
check-mode run and the real run after it can be compared: check mode must predict exactly the
tasks that then change. The file is $GPUFABRIC_CHANGES_LOG; each line also says whether the run
was in check mode.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpufabric_changes
type: aggregate
short_description: Record which tasks changed, for comparing a check run with the real run
description:
  - Appends one JSON line per task result to the file named by the environment variable GPUFABRIC_CHANGES_LOG.
requirements:
  - GPUFABRIC_CHANGES_LOG set in the environment
"""

import json
import os

from ansible import context
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufabric_changes"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._path = os.environ.get("GPUFABRIC_CHANGES_LOG")

    def _write(self, result, changed):
        if not self._path:
            return
        task = result._task
        record = {
            "check": bool(context.CLIARGS.get("check")),
            "host": result._host.get_name(),
            "task": task.get_name(),
            "role": task._role.get_name() if task._role else None,
            "changed": bool(changed),
        }
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")

    def v2_runner_on_ok(self, result):
        self._write(result, result._result.get("changed", False))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, result._result.get("changed", False))
