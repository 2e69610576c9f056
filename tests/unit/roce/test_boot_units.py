"""The roce role's systemd units as the role renders them: gpufabric-roce.service and the openibd
drop-in that re-applies the plan after every driver load or reload by openibd.

The units are rendered from the role's templates with the role's own defaults and vars, then
(when systemd-analyze is installed) loaded by systemd itself next to an openibd.service shaped
like the one DOCA-OFED/MLNX_OFED installs (fixtures/systemd/openibd.service, see the README
there), to show what systemd makes of them: the drop-in is found, a start of openibd pulls in
a start of the re-apply unit ordered after it, and a reload of openibd queues one after its own
driver restart.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufabric.rollout.plugins.action.plan import trusted

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "roce"
OPENIBD = Path(__file__).parent / "fixtures" / "systemd" / "openibd.service"
MANAGED = "Ansible managed: test"


def role_vars():
    out = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    out.update(yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
    out["ansible_managed"] = MANAGED
    return out


def render(name, variables):
    templar = Templar(loader=DataLoader(), variables=trusted(variables))
    return templar.template(trust_as_template((ROLE / "templates" / name).read_text()))


def ini(text):
    """A unit file as {section: {key: [values in order]}} (systemd keys repeat; Exec lines accumulate)."""
    sections = {}
    current = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            current = sections.setdefault(stripped[1:-1], {})
            continue
        key, value = stripped.split("=", 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.fixture(scope="module")
def units():
    variables = role_vars()
    templar = Templar(loader=DataLoader(), variables=trusted(variables))
    names = ("__roce_unit", "__roce_openibd_dropin", "__roce_apply_script", "roce_plan_dir")
    return {
        "vars": {name: templar.template(trust_as_template("{{ " + name + " }}")) for name in names},
        "service": render("gpufabric-roce.service.j2", variables),
        "dropin": render("openibd-dropin.conf.j2", variables),
    }


def test_dropin_is_where_systemd_reads_openibd_drop_ins(units):
    path = Path(units["vars"]["__roce_openibd_dropin"])
    assert path.parent == Path("/etc/systemd/system/openibd.service.d")
    assert path.suffix == ".conf"


def test_rendered_units_say_what_the_reapply_needs(units):
    unit = units["vars"]["__roce_unit"]
    service = ini(units["service"])
    dropin = ini(units["dropin"])
    assert units["service"].startswith("#") and MANAGED in units["service"]
    assert "openibd.service" in service["Unit"]["After"][0].split()
    assert service["Service"]["Type"] == ["oneshot"]
    # Without RemainAfterExit the oneshot is inactive after each run, so the next start runs it again.
    assert "RemainAfterExit" not in service["Service"]
    assert service["Service"]["ExecStart"] == [
        "/usr/bin/python3 {} {}/plan.json".format(units["vars"]["__roce_apply_script"], units["vars"]["roce_plan_dir"])
    ]
    assert service["Install"]["WantedBy"] == ["multi-user.target"]
    assert dropin["Unit"]["Wants"] == [unit]
    assert dropin["Service"]["ExecReload"] == [f"/usr/bin/systemctl --no-block start {unit}"]
    assert set(dropin) == {"Unit", "Service"}


def _verify(root, unit):
    env = dict(os.environ, SYSTEMD_UNIT_PATH=f"{root}:", SYSTEMD_LOG_LEVEL="debug", SYSTEMD_LOG_COLOR="0")
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "--generators=no", str(root / unit)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _section(dump, header):
    """The indented lines under '-> header:' in systemd-analyze's unit dump."""
    lines = dump.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"-> {header}:")
    out = []
    for line in lines[start + 1 :]:
        if line.strip().startswith("->") or not line.startswith("\t\t\t"):
            break
        out.append(line.strip())
    return out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_pulls_the_reapply_in_after_every_openibd_start_and_reload(units, tmp_path):
    unit = units["vars"]["__roce_unit"]
    dropin = Path(units["vars"]["__roce_openibd_dropin"])
    root = tmp_path / "system"
    (root / dropin.parent.name).mkdir(parents=True)
    init = tmp_path / "openibd-init"
    init.write_text("#!/bin/sh\nexit 0\n")
    init.chmod(0o755)
    (root / "openibd.service").write_text(OPENIBD.read_text().replace("/etc/init.d/openibd", str(init)))
    (root / unit).write_text(units["service"])
    (root / dropin.parent.name / dropin.name).write_text(units["dropin"])

    ours = (str(root / unit), str(root / dropin.parent.name / dropin.name))
    result = _verify(root, "openibd.service")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert not [line for line in out.splitlines() if line.startswith(ours)], out  # no complaint about our files
    assert f"DropIn Path: {root / dropin.parent.name / dropin.name}" in out
    assert f"Wants: {unit} (origin-file)" in out
    assert f"Before: {unit} (destination-file)" in out  # the re-apply runs after openibd
    assert f"Installed new job {unit}/start" in out  # a start of openibd starts it
    reload = _section(out, "ExecReload")
    assert reload[0].startswith(f"Command Line: {init} restart")  # openibd's own driver restart first
    assert reload[1:] == [f"Command Line: /usr/bin/systemctl --no-block start {unit}"]

    result = _verify(root, unit)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "RemainAfterExit: no" in out
    assert "Type: oneshot" in out
