"""Issue 37 point 9: NVMe-oF had no DH-HMAC-CHAP (NVMe in-band authentication), so any host that could
reach the array under a permitted host NQN got the namespaces. Now a subsystem may carry a host secret
and a controller secret; they are checked by format in the plan (and never repeated in a problem),
masked in the checked intent the plan play returns, absent from the plan, its files, the node record
and the summary, kept on the node in root-only files (0600) by no_log tasks, and read from there by
the connect script.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import stat
import sys
import zlib
from pathlib import Path

import pytest
import yaml
from role_runner import ansible_playbook
from storage_support import REPO, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import storage as _intent_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster_summary as _cluster_summary
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

TASKS = REPO / "roles" / "storage_client" / "tasks" / "nvmeof.yml"
BLOCKS = 2  # gpufabric_storage[2] of the lab intent: the NVMe-oF filesystem


def secret(seed: int, hash_id: str = "00", length: int = 32) -> str:
    """A DH-HMAC-CHAP secret the way nvme gen-dhchap-key writes one: key + CRC-32 (little-endian), base64."""
    key = bytes((seed + i) % 256 for i in range(length))
    return f"DHHC-1:{hash_id}:{base64.b64encode(key + zlib.crc32(key).to_bytes(4, 'little')).decode()}:"


HOST = secret(7)
CTRL = secret(91, "02", 48)
# One character of the key part changed: the length holds, the CRC-32 does not.
TYPO = HOST[:20] + ("B" if HOST[20] != "B" else "C") + HOST[21:]


@pytest.fixture(scope="module")
def specs():
    from storage_support import PLAN

    return PLAN.load_specs(str(REPO))


def check(specs, nvmeof=None, export=None):
    from storage_support import PLAN

    variables = lab_variables()
    fs = variables["gpufabric_storage"][BLOCKS]
    fs["nvmeof"].update(nvmeof or {})
    if export is not None:
        fs["export"] = export
    return PLAN.check(specs, "node", variables)


def test_the_secrets_never_reach_the_plan_its_files_or_the_summary(specs):
    values, problems = check(specs, {"dhchap_secret": HOST, "dhchap_ctrl_secret": CTRL})
    assert problems == []
    intent = _intent_storage.mask_secrets(values)  # what the plan action returns as gpufabric_intent
    assert HOST not in json.dumps(intent) and CTRL not in json.dumps(intent)
    node_plan = _plan_node.plan_node(intent, node_facts(1))
    record = _node_records.node_record(node_plan, node_facts(1)["topology"])
    summary = _cluster_summary.node_summary(node_plan, node_facts(1)["topology"])
    for text in (json.dumps(node_plan), json.dumps(record), summary):
        assert HOST not in text and CTRL not in text and "DHHC-1" not in text
    nvme = node_plan["storage_client"]["nvme"]
    assert [(f["name"], f["key"]) for f in nvme["secret_files"]] == [
        ("blocks", "dhchap_secret"),
        ("blocks", "dhchap_ctrl_secret"),
    ]
    assert all(f["path"] in nvme["conf"] for f in nvme["secret_files"]), "the connect script is told the files"


@pytest.mark.parametrize(
    ("nvmeof", "path", "words"),
    [
        ({"dhchap_secret": TYPO}, "nvmeof.dhchap_secret", "CRC-32"),
        ({"dhchap_secret": "hunter2-not-a-key"}, "nvmeof.dhchap_secret", "DHHC-1:00:BASE64:"),
        ({"dhchap_secret": secret(3, "03", 32)}, "nvmeof.dhchap_secret", "64 byte key"),
        ({"dhchap_ctrl_secret": CTRL}, "nvmeof.dhchap_ctrl_secret", "needs nvmeof.dhchap_secret"),
        ({"dhchap_secert": HOST}, "nvmeof", "did you mean 'dhchap_secret'"),
    ],
)
def test_a_bad_secret_is_refused_without_repeating_it(specs, nvmeof, path, words):
    _values, problems = check(specs, nvmeof)
    named = [p for p in problems if p.startswith(f"gpufabric_storage[{BLOCKS}].{path}")]
    assert any(words in p for p in named), problems
    for value in nvmeof.values():
        assert not any(value in p for p in problems), "a problem repeats the secret"


@pytest.mark.parametrize(
    ("export", "words"),
    [
        ("nqn.2014-08.org.nvmexpress.discovery", "not an NVMe qualified name"),
        ("nqn.2026-01.io.gpufabric.lab:two words", "not an NVMe qualified name"),
        ("nqn.2026-13.io.gpufabric.lab:blocks", "not an NVMe qualified name"),
        ("nqn.2026-01.io.gpufabric.lab:" + "\u00e9" * 100, "longer than 223 bytes"),
    ],
)
def test_a_bad_nqn_is_refused_naming_the_variable(specs, export, words):
    _values, problems = check(specs, export=export)
    assert any(p.startswith(f"gpufabric_storage[{BLOCKS}].export") and words in p for p in problems), problems


def secret_tasks(tmp_path: Path):
    """The role's tasks that hold the secrets or write the files the script reads, as they stand."""
    wanted = ("root-only directory", "DH-HMAC-CHAP secrets (root only)", "planned NVMe-oF paths")
    tasks = [t for t in yaml.safe_load(TASKS.read_text()) if any(w in t.get("name", "") for w in wanted)]
    assert len(tasks) == 3, "the role keeps no DH-HMAC-CHAP secret"
    return tasks


@pytest.mark.skipif(os.geteuid() != 0, reason="the tasks chown to root")
def test_the_secret_files_are_root_only_and_the_run_never_shows_them(tmp_path, specs):
    values, _problems = check(specs, {"dhchap_secret": HOST, "dhchap_ctrl_secret": CTRL})
    section = _plan_node.plan_node(_intent_storage.mask_secrets(values), node_facts(1))["storage_client"]
    nvme = copy.deepcopy(section["nvme"])
    where = tmp_path / "etc-nvme-gpufabric"
    for item in nvme["secret_files"]:
        item["path"] = item["path"].replace(nvme["dir"], str(where))
    nvme["dir"], nvme["conf_path"] = str(where), str(where / "connect.conf")
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": secret_tasks(tmp_path)}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "vars.json").write_text(
        json.dumps(
            {
                "__storage_client_plan": {"nvme": nvme},
                "__storage_client_nvme_pending": False,
                "gpufabric_storage": lab_variables(
                    gpufabric_storage=[
                        {"name": "blocks", "nvmeof": {"dhchap_secret": HOST, "dhchap_ctrl_secret": CTRL}}
                    ]
                )["gpufabric_storage"],
            }
        )
    )
    done = ansible_playbook(
        tmp_path,
        "-i",
        "localhost,",
        "-e",
        "@vars.json",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "--diff",
        "-vvv",
        "play.yml",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert HOST not in done.stdout + done.stderr and CTRL not in done.stdout + done.stderr, "the run showed a secret"
    assert stat.S_IMODE(where.stat().st_mode) == 0o700
    for item in nvme["secret_files"]:
        path = Path(item["path"])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == 0
        assert path.read_text().strip() == (HOST if item["key"] == "dhchap_secret" else CTRL)
