"""cufile.json editor: byte-identical no-ops, only requested keys change, comments kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile

FIXTURES = Path(__file__).parent / "fixtures" / "cufile"
ALL = sorted(p.name for p in FIXTURES.glob("*.json"))
SHIPPED = "h200-gds-1.15.1.6-cuda13.0.json"


def _text(name):
    return (FIXTURES / name).read_bytes().decode("utf-8")


def _flat(data, prefix=""):
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _comments(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith("//")]


@pytest.mark.parametrize("name", ALL)
def test_noop_with_current_values_is_byte_identical(name):
    text = _text(name)
    data = _cufile.parse(text)
    # Ask for every leaf to be what it already is.
    result, changed = _cufile.apply_settings(text, data)
    assert changed == []
    assert result is text


@pytest.mark.parametrize("name", ALL)
def test_parse_reads_the_documented_sections(name):
    text = _text(name)
    data = _cufile.parse(text)
    assert isinstance(data, dict) and data
    # Every top-level section NVIDIA documents and the file has, as data.
    if name == SHIPPED:
        assert set(data) == {"logging", "profile", "execution", "properties", "fs", "denylist", "miscellaneous"}
        assert data["properties"]["allow_compat_mode"] is True
        assert data["properties"]["rdma_dev_addr_list"] == []
        assert data["fs"]["nfs"] == {}
        assert data["properties"]["rdma_dynamic_routing_order"] == ["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"]


CHANGES = [
    ({"properties": {"allow_compat_mode": False}}, ["properties.allow_compat_mode"]),
    ({"properties": {"rdma_dev_addr_list": ["10.0.0.11", "10.0.1.11"]}}, ["properties.rdma_dev_addr_list"]),
    (
        {"properties": {"use_pci_p2pdma": True, "force_compat_mode": True}},
        ["properties.use_pci_p2pdma", "properties.force_compat_mode"],
    ),
    ({"fs": {"nfs": {"rdma_dev_addr_list": ["10.0.0.11"]}}}, ["fs.nfs.rdma_dev_addr_list"]),
    (
        {"fs": {"lustre": {"mount_table": {"/lustre/a": {"rdma_dev_addr_list": ["10.0.0.11"]}}}}},
        ["fs.lustre.mount_table./lustre/a.rdma_dev_addr_list"],
    ),
    (
        {"fs": {"gpfs": {"gds_write_support": True}, "weka": {"rdma_write_support": True}}},
        ["fs.gpfs.gds_write_support", "fs.weka.rdma_write_support"],
    ),
    ({"fs": {"beegfs": {"rdma_dev_addr_list": ["10.0.0.11"]}}}, ["fs.beegfs.rdma_dev_addr_list"]),
    ({"logging": {"level": "WARN", "dir": "/var/log/cufile"}}, ["logging.level", "logging.dir"]),
    ({"new_section": {"a": {"b": 1}}}, ["new_section.a.b"]),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("desired", "paths"), CHANGES, ids=[",".join(p) for _d, p in CHANGES])
def test_change_touches_only_requested_keys(name, desired, paths):
    text = _text(name)
    before = _flat(_cufile.parse(text))
    result, changed = _cufile.apply_settings(text, desired)
    after = _flat(_cufile.parse(result))
    differ = sorted(k for k in set(before) | set(after) if before.get(k, "<absent>") != after.get(k, "<absent>"))
    expected = sorted(p for p in paths if before.get(p, "<absent>") != after.get(p))
    assert sorted(changed) == sorted(p for p in paths if p in expected or p not in before)
    assert differ == sorted(changed)
    # Every comment survives, in order.
    assert _comments(result) == _comments(text)
    # Idempotent: applying again changes nothing and returns the same object.
    again, changed_again = _cufile.apply_settings(result, desired)
    assert changed_again == [] and again is result


def test_shipped_file_lines_outside_the_edit_are_untouched():
    text = _text(SHIPPED)
    result, changed = _cufile.apply_settings(text, {"properties": {"allow_compat_mode": False}})
    assert changed == ["properties.allow_compat_mode"]
    old, new = text.splitlines(keepends=True), result.splitlines(keepends=True)
    assert len(old) == len(new)
    differing = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert len(differing) == 1
    assert old[differing[0]].replace("true", "false") == new[differing[0]]


def test_insert_into_comment_only_section_keeps_comments_and_indent():
    text = _text(SHIPPED)
    result, _changes = _cufile.apply_settings(text, {"fs": {"nfs": {"rdma_dev_addr_list": ["10.0.0.11"]}}})
    line = next(ln for ln in result.splitlines() if '"rdma_dev_addr_list": ["10.0.0.11"]' in ln)
    nfs_part = text[text.index('"nfs": {') :]
    comment = next(ln for ln in nfs_part.splitlines() if "To restrict the IO to selected IP list" in ln)
    assert line[: len(line) - len(line.lstrip())] == comment[: len(comment) - len(comment.lstrip())]


def test_compat_mode_uses_the_key_the_file_has():
    old = _text("older-compat-key.json")
    desired = _cufile.build_desired(_cufile.parse(old), compat_mode=False)
    assert desired == {"properties": {"use_compat_mode": False}}
    result, changed = _cufile.apply_settings(old, desired)
    assert changed == ["properties.use_compat_mode"]
    assert '"use_compat_mode" : false, // fall back to POSIX' in result
    shipped = _cufile.parse(_text(SHIPPED))
    assert _cufile.build_desired(shipped, compat_mode=True) == {"properties": {"allow_compat_mode": True}}


@pytest.mark.parametrize("compat", [True, False])
@pytest.mark.parametrize("mode", ["nvidia_fs", "p2pdma"])
def test_the_roles_least_settings_change_nvidias_shipped_file(compat, mode):
    """gpudirect_storage's check mode predicts 'Set the cuFile configuration' as a change when the
    file comes with the run's GDS packages (NVIDIA's shipped file): the role always sets
    force_compat_mode, which that file lacks, so even a plan with nothing else to set changes it."""
    text = _text(SHIPPED)
    desired = _cufile.build_desired(
        _cufile.parse(text),
        compat_mode=compat,
        force_compat_mode=False,
        use_pci_p2pdma=mode == "p2pdma",
        rdma_dev_addr_list=[],
    )
    _result, changed = _cufile.apply_settings(text, desired)
    assert "properties.force_compat_mode" in changed


def test_build_desired_rejects_unknown_filesystem():
    with pytest.raises(ValueError, match=r"unknown filesystem section.*zfs"):
        _cufile.build_desired({}, filesystems={"zfs": {"x": 1}})


def test_value_types_are_not_confused():
    # 1 is not true: a file holding 1 where true is wanted must change.
    text = '{"properties": {"use_poll_mode": 1}}'
    result, changed = _cufile.apply_settings(text, {"properties": {"use_poll_mode": True}})
    assert changed == ["properties.use_poll_mode"] and json.loads(result)["properties"]["use_poll_mode"] is True


@pytest.mark.parametrize("bad", ['{"a": }', '{"a": 1', '{"a" 1}', "[1, 2]", '{"a": "x\n"}', '{"a": 1} x', "{/* x"])
def test_syntax_errors_are_reported(bad):
    with pytest.raises(_cufile.CufileSyntaxError):
        _cufile.parse(bad)


def test_path_through_a_scalar_is_refused():
    with pytest.raises(ValueError, match=r"properties\.use_poll_mode is not an object"):
        _cufile.apply_settings('{"properties": {"use_poll_mode": false}}', {"properties": {"use_poll_mode": {"x": 1}}})
