# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for gpufabric.rollout.report_file: the run's report written on the controller by the worker
itself (a new file in the same folder, then a rename), with no connection and no module process."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase


def parse_mode(value: object) -> int:
    """An octal permission string ("0644") as an int, or a clear error."""
    text = to_text(value).strip()
    try:
        mode = int(text, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o7777:
        raise AnsibleActionFail(f"report_file: mode is {text!r}; give an octal permission string such as '0644'")
    return mode


def current(dest: str, mode: int, data: bytes) -> bool:
    """Whether dest is a regular file (not a link) that already holds data with mode."""
    try:
        info = os.lstat(dest)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) != mode or info.st_size != len(data):
        return False
    with open(dest, "rb") as handle:
        return handle.read() == data


def replace(dest: str, mode: int, data: bytes) -> None:
    """Write data to a new file beside dest, then rename it over dest (a link at dest is replaced)."""
    folder = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(folder):
        raise AnsibleActionFail(f"report_file: the folder of dest {dest!r} does not exist on the controller")
    handle, temp = tempfile.mkstemp(prefix=".report-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temp, mode)
        os.replace(temp, dest)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(("content", "dest", "mode"))

    def run(self, tmp: Optional[str] = None, task_vars: Optional[dict] = None) -> dict:
        result = super().run(tmp, task_vars)
        args = self._task.args
        for name in ("content", "dest"):
            if args.get(name) is None:
                raise AnsibleActionFail(f"report_file: {name} is required")
        dest = os.path.expanduser(to_text(args["dest"]))
        mode = parse_mode(args.get("mode", "0644"))
        data = to_bytes(to_text(args["content"]), errors="surrogate_or_strict")
        result.update(dest=dest, size=len(data), changed=not current(dest, mode, data))
        if result["changed"] and not self._play_context.check_mode:
            try:
                replace(dest, mode, data)
            except OSError as exc:
                raise AnsibleActionFail(f"report_file: cannot write {dest}: {exc}") from exc
        return result
