"""AWX's side of a job, for the tests that run the collection as AWX does (test_awx_runner.py).

What AWX does around ansible-runner, reproduced from its source (ansible/awx, devel, 2024-10):

- the job's inventory is a script that prints JSON (awx/main/tasks/jobs.py ``write_inventory_file``)
  made by ``Inventory.get_script_data`` (awx/main/models/inventory.py): ``all`` carries the
  inventory's variables, every group its variables and its hosts, ungrouped hosts sit in
  ``all.hosts``, ``_meta.hostvars`` the host variables plus ``remote_tower_enabled`` /
  ``remote_tower_id``. For slice N of M of a sliced job (``get_sliced_hosts``) only the hosts
  ``sorted(hosts)[N-1::M]`` are in it, and every group keeps only those: a slice's
  ``groups['gpu_nodes']`` holds its own nodes, and ``localhost``, when the inventory has it, is in
  one slice only;
- the private data dir (``build_private_data_dir`` and friends): ``project/`` is a copy of the
  project's checkout (``sync_and_copy``), ``inventory/hosts`` the script, ``env/extravars`` the
  template's extra vars plus the survey answers, the credentials' injected extra vars and AWX's
  meta variables (``build_extra_vars_file``, ``awx_meta_vars``), ``env/cmdline`` the
  ansible-playbook arguments (``build_args``: ``-u``, ``--check``, ``--diff``, ``-l LIMIT``, ...);
  the environment holds AWX's ``ANSIBLE_*`` settings (awx/settings/defaults.py) and the
  credentials' injected variables (``K8S_AUTH_KUBECONFIG`` for the gpufabric kubeconfig type);
- ``fact_cache_type='jsonfile'`` when the template keeps facts (``use_fact_cache``), with
  ``artifacts/<job id>/fact_cache`` seeded before the job from the hosts' stored facts
  (awx/main/tasks/facts.py ``start_fact_cache``);
- the job's artifacts are the ``artifact_data`` of its ``playbook_on_stats`` event (what the
  playbook published with ``set_stats``; awx/main/tasks/callback.py), and in a workflow they
  become extra vars of the next node's job (awx/main/models/workflow.py
  ``WorkflowJobNode.get_job_kwargs``).

What is not reproduced: the execution environment's container (the job runs in this process's
Python, with the checkout as the installed collection, as ANSIBLE_COLLECTIONS_PATH) and receptor.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

import yaml

# AWX's defaults for every job's environment (awx/settings/defaults.py ANSIBLE_*), except
# ANSIBLE_FORCE_COLOR: colour is turned off so that the tests' failure output stays readable.
AWX_ANSIBLE_SETTINGS = {
    "ANSIBLE_HOST_KEY_CHECKING": "False",
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False",
    "ANSIBLE_RETRY_FILES_ENABLED": "False",
    "ANSIBLE_NOCOLOR": "True",
}


@dataclass
class Inventory:
    """An AWX inventory as its database holds it once an SCM inventory source is imported."""

    variables: Dict[str, Any]
    hosts: Dict[str, Dict[str, Any]]
    groups: Dict[str, Dict[str, Any]]  # name -> {"hosts": [...], "vars": {...}}

    def script_data(self, slice_number: int = 1, slice_count: int = 1) -> Dict[str, Any]:
        """Inventory.get_script_data(hostvars=True, towervars=True, slice_number, slice_count)."""
        names = sorted(self.hosts)
        if slice_count > 1 and slice_number > 0:
            names = names[slice_number - 1 :: slice_count]
        present = set(names)
        data: Dict[str, Any] = {"all": {}}
        if self.variables:
            data["all"]["vars"] = self.variables
        grouped = set()
        for name, group in self.groups.items():
            info: Dict[str, Any] = {}
            members = [h for h in group.get("hosts", []) if h in present]
            if members:
                info["hosts"] = members
                grouped.update(members)
            if group.get("vars"):
                info["vars"] = group["vars"]
            if info:
                data[name] = info
        data["all"]["hosts"] = [h for h in names if h not in grouped]
        data["all"]["children"] = list(self.groups)
        data["_meta"] = {
            "hostvars": {
                h: dict(self.hosts[h], remote_tower_enabled="true", remote_tower_id=i)
                for i, h in enumerate(names, start=1)
            }
        }
        return data


@dataclass
class Job:
    """One finished job: what AWX stores of it."""

    id: int
    private_data_dir: Path
    status: str
    rc: int
    events: List[Dict[str, Any]]
    stdout: str
    fact_cache: Optional[Path]

    @property
    def artifacts(self) -> Dict[str, Any]:
        """job.artifacts: the playbook_on_stats event's artifact_data."""
        stats = [e for e in self.events if e.get("event") == "playbook_on_stats"]
        return (stats[-1].get("event_data") or {}).get("artifact_data") or {} if stats else {}

    def events_of(self, kind: str, task: Optional[str] = None, host: Optional[str] = None) -> List[Dict[str, Any]]:
        out = []
        for event in self.events:
            data = event.get("event_data") or {}
            if event.get("event") != kind:
                continue
            if task is not None and data.get("task") != task:
                continue
            if host is not None and data.get("host") != host:
                continue
            out.append(event)
        return out

    def hosts_where(self, kind: str, task: str) -> List[str]:
        return sorted({(e.get("event_data") or {}).get("host") for e in self.events_of(kind, task)})

    def failures(self) -> List[str]:
        """Every failed task: host, task and message (what the job's output shows in red)."""
        out = []
        for event in self.events_of("runner_on_failed"):
            data = event["event_data"]
            res = data.get("res") or {}
            out.append(f"{data.get('host')}: {data.get('task')}: {res.get('msg', res)}")
        return out


@dataclass
class Awx:
    """Runs jobs as AWX does, one private data dir each, under `root`."""

    root: Path
    project: Path  # the checkout AWX syncs as the project
    collections: Path  # where the execution environment has gpufabric.rollout installed
    env: Dict[str, str] = field(default_factory=dict)  # the credentials' injected variables
    credential_extravars: Dict[str, Any] = field(default_factory=dict)
    _next_id: int = 1
    _facts: Dict[str, List[Path]] = field(default_factory=dict)  # host -> its last cached facts files

    def _copy_project(self, dest: Path) -> None:
        """sync_and_copy: the project's files (what git tracks, and new files it does not ignore)."""
        listed = subprocess.run(
            ["git", "-C", str(self.project), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout.decode()
        for rel in filter(None, listed.split("\0")):
            src = self.project / rel
            if src.is_file() and not src.is_symlink():
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)

    def run(
        self,
        playbook: str,
        inventory: Inventory,
        *,
        limit: Optional[str] = None,
        slice_number: int = 1,
        slice_count: int = 1,
        extra_vars: Optional[Mapping[str, Any]] = None,
        artifacts_from: Sequence[Job] = (),
        use_fact_cache: bool = True,
    ) -> Job:
        import ansible_runner

        job_id = self._next_id
        self._next_id += 1
        pdd = self.root / f"job-{job_id}"
        for sub in ("project", "inventory", "env"):
            (pdd / sub).mkdir(parents=True)
        self._copy_project(pdd / "project")
        script = pdd / "inventory" / "hosts"
        data = json.dumps(inventory.script_data(slice_number, slice_count))
        script.write_text(f"#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint({data!r})\n")
        script.chmod(0o700)
        # Ancestor artifacts first, then the template's extra vars, AWX's meta variables last.
        extravars: Dict[str, Any] = {}
        for ancestor in artifacts_from:
            extravars.update(ancestor.artifacts)
        extravars.update(extra_vars or {})
        extravars.update(self.credential_extravars)
        extravars.update({"awx_job_id": job_id, "awx_job_launch_type": "manual", "awx_inventory_name": "gpufabric"})
        (pdd / "env" / "extravars").write_text(yaml.safe_dump(extravars))
        args = ["-u", "root"] + (["-l", limit] if limit else [])
        (pdd / "env" / "cmdline").write_text(shlex.join(args))
        tmp = pdd / "tmp"
        tmp.mkdir()
        envvars = dict(AWX_ANSIBLE_SETTINGS, JOB_ID=str(job_id), AWX_PRIVATE_DATA_DIR=str(pdd), TMPDIR=str(tmp))
        envvars["ANSIBLE_COLLECTIONS_PATH"] = str(self.collections)
        # ansible-playbook of this toolchain, as the execution environment has its own on PATH.
        envvars["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
        envvars.update(self.env)
        (pdd / "env" / "envvars").write_text(yaml.safe_dump(envvars))
        fact_cache = pdd / "artifacts" / str(job_id) / "fact_cache" if use_fact_cache else None
        if fact_cache is not None:
            # start_fact_cache: the hosts of this job (of this slice) get their stored facts back.
            # AWX stores and writes a file named after the host; ansible-core 2.19 names its cache
            # files s1_<host> (a schema prefix), so AWX's round trip carries nothing there. The files
            # ansible-core wrote are carried here instead: a fact cache that works across jobs (AWX
            # with ansible-core before 2.19, or ansible.cfg fact_caching from a shell).
            fact_cache.mkdir(parents=True)
            for host in inventory.script_data(slice_number, slice_count)["_meta"]["hostvars"]:
                for stored in self._facts.get(host, []):
                    shutil.copy2(stored, fact_cache / stored.name)
        with _without_ansible_environment():
            result = ansible_runner.run(
                private_data_dir=str(pdd),
                ident=str(job_id),
                playbook=playbook,
                inventory=str(script),
                fact_cache_type="jsonfile" if use_fact_cache else "",
                quiet=True,
            )
        stdout = (pdd / "artifacts" / str(job_id) / "stdout").read_text(errors="replace")
        if fact_cache is not None:
            # finish_fact_cache: keep what the job cached for each of its hosts, for later jobs.
            for host in inventory.script_data(slice_number, slice_count)["_meta"]["hostvars"]:
                files = [p for p in fact_cache.iterdir() if p.name == host or p.name.endswith("_" + host)]
                if files:
                    self._facts[host] = files
        return Job(
            id=job_id,
            private_data_dir=pdd,
            status=result.status,
            rc=result.rc,
            events=list(result.events),
            stdout=stdout,
            fact_cache=fact_cache,
        )


@contextlib.contextmanager
def _without_ansible_environment() -> Iterator[None]:
    """ansible-runner passes this process's environment on: the caller's ANSIBLE_* (the Makefile's
    ANSIBLE_CONFIG, a developer's fact cache) must not steer the job away from what AWX sets."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("ANSIBLE_")}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)
