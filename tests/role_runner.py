"""Run one of the collection's roles on localhost with ansible-playbook, as the unit tests that
render and the control-plane tests that apply do (the checkout is the collection: .collections)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

REPO = Path(__file__).resolve().parents[1]


def short_tmpdir() -> Path:
    """A fresh TMPDIR for one ansible-playbook run, with a short path: ansible-core 2.21 starts a
    local RPC server on a unix socket under TMPDIR (multiprocessing's listener-* in a pymp-*
    directory), and a socket path is limited to 107 bytes, which a pytest tmp_path can pass; the
    server then never starts ("Local RPC server did not start"). Remove it after the run."""
    return Path(tempfile.mkdtemp(prefix="gf."))


ROLE_PLAYBOOK = """
- name: Run {role}
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  roles:
    - role: {role}
"""


def ansible_playbook(
    tmp: Path, *args: str, env: Optional[Dict[str, str]] = None, cwd: Path = REPO, timeout: int = 300
) -> subprocess.CompletedProcess:
    """ansible-playbook ARGS from the checkout, as a user runs it (the checkout's ansible.cfg, no
    colour), with its temporary files in `tmp`, a short TMPDIR of its own and `env` on top;
    output captured."""
    (tmp / "ansible-tmp").mkdir(parents=True, exist_ok=True)
    run_tmp = short_tmpdir()
    run_env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", TMPDIR=str(run_tmp))
    run_env["ANSIBLE_LOCAL_TEMP"] = str(tmp / "ansible-tmp")
    run_env.update(env or {})
    try:
        return subprocess.run(
            [str(Path(sys.executable).parent / "ansible-playbook"), *args],
            cwd=cwd,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)


def run_role_playbook(
    tmp: Path, role: str, variables: Dict[str, Any], *extra: str, log: Optional[Path] = None
) -> Dict[str, Any]:
    """ansible-playbook running `role` (its FQCN) on localhost with `variables` and `extra` arguments, its
    task results logged to `log` (tests/callbacks/gpufabric_changes) when given. Each run has its own
    temporary directory (kubernetes.core caches API discovery there) and Helm homes. Returns rc,
    the output's tail and the changed count of localhost (-1 without a recap)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "vars.json").write_text(json.dumps(variables, default=str))
    (tmp / "play.yml").write_text(ROLE_PLAYBOOK.format(role=role))
    env = {
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
        "HELM_CACHE_HOME": str(tmp / "helm" / "cache"),
        "HELM_CONFIG_HOME": str(tmp / "helm" / "config"),
        "HELM_DATA_HOME": str(tmp / "helm" / "data"),
    }
    if log:
        env.update(
            ANSIBLE_CALLBACK_PLUGINS=str(REPO / "tests" / "callbacks"),
            ANSIBLE_CALLBACKS_ENABLED="gpufabric_changes",
            GPUFABRIC_CHANGES_LOG=str(log),
        )
    python = f"ansible_python_interpreter={sys.executable}"
    args = ("-i", "localhost,", "-e", python, str(tmp / "play.yml"), *extra)
    done = ansible_playbook(tmp, *args, env=env, cwd=tmp, timeout=600)
    recap = re.search(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)", done.stdout, re.M)
    return {
        "rc": done.returncode,
        "out": done.stdout[-6000:] + done.stderr[-2000:],
        "changed": int(recap.group(1)) if recap else -1,
    }
