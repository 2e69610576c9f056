"""Issue 37 point 9: shared filesystems were mounted without nosuid,nodev. A set-user-ID root binary or a
device node placed on the NFS, Lustre or WEKA filesystem by anyone who can write there (another
cluster, a compromised Pod with the volume) was honoured on every GPU node that mounts it: root on
the node. Every host mount now gets nosuid,nodev unless the entry allows them by name (allow_suid,
allow_devices), and the read-back refuses a mount without them.
"""

from __future__ import annotations

import pytest
import test_lab_storage as lab_storage
from storage_support import REPO, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node

pristine = lab_storage.pristine
lab = lab_storage.lab


@pytest.fixture(scope="module")
def specs():
    from storage_support import PLAN

    return PLAN.load_specs(str(REPO))


def plan(specs, **changes):
    from storage_support import PLAN

    variables = lab_variables()
    for index, change in changes.get("storage", {}).items():
        variables["gpufabric_storage"][index].update(change)
    values, problems = PLAN.check(specs, "node", variables)
    return (_plan_node.plan_node(values, node_facts(1)) if not problems else None), problems


def test_every_host_mount_gets_nosuid_and_nodev(specs):
    result, problems = plan(specs)
    assert problems == []
    mounts = {fs["name"]: fs["mount"] for fs in result["storage_client"]["filesystems"] if fs["mount"]}
    assert set(mounts) == {"datasets", "scratch", "checkpoints"}
    for name, mount in mounts.items():
        options = mount["fstab_options"].split(",")
        assert "nosuid" in options and "nodev" in options, f"{name} is mounted with {mount['fstab_options']}"


def test_the_mounted_options_carry_them_and_the_readback_checks(specs, lab):
    result, _problems = plan(specs)
    lab_storage.install(lab)
    lab_storage.carry_out(lab, result["storage_client"])
    readback, observed = lab_storage.readback(lab, result)
    assert readback["problems"] == []
    for target in ("/mnt/datasets", "/mnt/scratch", "/mnt/checkpoints"):
        shown = next(m for m in observed["mounts"] if m["target"] == target)["option_list"]
        assert "nosuid" in shown and "nodev" in shown, f"{target}: {shown}"
    # A mount made by hand (or by the old fstab line) without them is named.
    mounts = lab / "sysroot/proc/mounts"
    mounts.write_text(mounts.read_text().replace("nosuid,", "", 1))
    readback, _observed = lab_storage.readback(lab, result)
    assert any("without nosuid" in p for p in readback["problems"]), readback["problems"]


def test_allowing_suid_is_explicit_and_per_entry(specs):
    result, problems = plan(specs, storage={0: {"allow_suid": True}})
    assert problems == []
    filesystems = result["storage_client"]["filesystems"]
    mounts = {fs["name"]: fs["mount"]["fstab_options"].split(",") for fs in filesystems if fs["mount"]}
    assert "nosuid" not in mounts["datasets"] and "nodev" in mounts["datasets"]
    assert "nosuid" in mounts["scratch"]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"mount_options": ["suid"]}, "gpufabric_storage[0].mount_options[0]", "allow_suid"),
        ({"mount_options": ["dev"]}, "gpufabric_storage[0].mount_options[0]", "allow_devices"),
        ({"allow_suid": "perhaps"}, "gpufabric_storage[0].allow_suid", "true or false"),
        ({"allow_suidd": True}, "gpufabric_storage[0]", "allow_suid"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_variable(specs, change, path, words):
    _result, problems = plan(specs, storage={0: change})
    assert any(p.startswith(path) and words in p for p in problems), problems
