"""Helpers for module tests: a Runner that answers from a table, and running a module's main()."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner

Answer = Union[str, Tuple[int, str, str]]


def fake_runner(table: Dict[Tuple[str, ...], Answer], calls: Optional[List[Tuple[str, ...]]] = None) -> Runner:
    """Tools named in ``table`` are installed in /usr/sbin; ``table[(tool, *args)]`` is what a call
    prints (a str: rc 0) or (rc, stdout, stderr); other calls fail with rc 1."""
    tools = {key[0] for key in table}

    def run(argv):
        key = (Path(argv[0]).name, *argv[1:])
        if calls is not None:
            calls.append(key)
        answer = table.get(key, (1, "", f"{key[0]}: unexpected call"))
        return (0, answer, "") if isinstance(answer, str) else answer

    return Runner(run=run, which=lambda name: f"/usr/sbin/{name}" if name in tools else None)


def run_module(module: Any, args: Dict[str, Any], monkeypatch: Any, capsys: Any, runner: Optional[Runner] = None):
    """(exit code, result) of ``module.main()`` with ``args``, its commands answered by ``runner``."""
    if runner is not None:
        monkeypatch.setattr(Runner, "for_module", classmethod(lambda cls, _module: runner))
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)
