"""Finding 4: the product's ansible.cfg (the project AWX syncs and users run from) turned host key checking
off for every host, so a machine in the middle of the SSH connection to a production node got root's
session unchallenged. Now only the lab turns it off (lab/common.sh lab_connection_env, which the lab
scripts and the molecule runner call: its nodes are containers made afresh with new host keys)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ansible.config.manager import ConfigManager

REPO = Path(__file__).resolve().parents[2]


def test_the_product_configuration_checks_host_keys(monkeypatch):
    for name in list(os.environ):
        if name.startswith("ANSIBLE_"):
            monkeypatch.delenv(name)
    config = ConfigManager(str(REPO / "ansible.cfg"))
    assert config.get_config_value("HOST_KEY_CHECKING") is True
    # ansible-core 2.21 dropped the paramiko connection and its setting; where a core still has it,
    # it must not add unknown keys either.
    if "PARAMIKO_HOST_KEY_AUTO_ADD" in config.get_configuration_definitions():
        assert config.get_config_value("PARAMIKO_HOST_KEY_AUTO_ADD") is False
    text = (REPO / "ansible.cfg").read_text().lower().replace(" ", "")
    assert "stricthostkeychecking=no" not in text and "userknownhostsfile=/dev/null" not in text


def test_the_lab_turns_host_key_checking_off_for_itself():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    for transport in ("ssh", "podman"):
        env["GPUFABRIC_LAB_CONNECTION"] = transport
        out = subprocess.run(
            ["bash", "-c", 'source lab/common.sh && lab_connection_env && printf %s "${ANSIBLE_HOST_KEY_CHECKING:-}"'],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout == "False", (transport, out.stderr)
