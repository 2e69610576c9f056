"""Inputs that made the parsers raise bare ValueError/IndexError/OverflowError/RecursionError
before they were hardened (found by mutating the fixtures), each with the documented answer now."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import qos as _qos_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import topology as _topology_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator_values as _gpu_operator_values
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, version_numbers

ROCE = Path(__file__).resolve().parents[1] / "roce" / "fixtures"
VALIDATE = Path(__file__).resolve().parents[1] / "validate" / "fixtures"
MLNX = (ROCE / "mlnx_qos/fw_ets_two_pfc_buffers.txt").read_text()
HUGE = "9" * 5000


def _line_of(text, needle):
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("130944,130944,0", "130944,abc,0", "receive buffer size: 'abc' is not an integer"),  # was ValueError
        ("tc: 7 ratelimit", "tc: 8 ratelimit", "TC: 8 is out of range 0..7"),  # was IndexError
        ("priority:  7", "priority:  8", "priority: 8 is out of range 0..7"),  # was IndexError
        ("priority:  7", "priority:  -1", "priority: -1 is out of range 0..7"),  # silently set prio_tc[7]
        ("Cable len: 30", f"Cable len: {HUGE}", "cable length: ' " + "9" * 20),  # int() digit limit
        ("prio:2\n", "prio:9\n", "default priority: 9 is out of range 0..7"),
        ("25.0 Gbps", " ", "TC rate limit: '' is not a number"),  # was IndexError
        ("prio:3 dscp:31", "prio:3 dscp:64", "DSCP: 64 is out of range 0..63"),
    ],
)
def test_mlnx_qos_malformed(old, new, message):
    text = MLNX.replace(old, new, 1)
    with pytest.raises(ParseError) as exc:
        _qos_parsers.parse_mlnx_qos(text)
    assert message in str(exc.value)
    assert exc.value.lineno == _line_of(text, new.strip() or "ratelimit:  ,")


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        ("parse_dcb_pfc", "prio-pfc on\n", "dcb pfc output has no prio-pfc mapping (prio-pfc on)"),  # was ValueError
        ("parse_dcb_pfc", "prio-pfc x:on\n", "prio-pfc index: 'x' is not an integer"),  # was ValueError
        ("parse_dcb_pfc", "prio-pfc 8:on\n", "prio-pfc index: 8 is out of range 0..7"),
        ("parse_dcb_ets", "prio-tc all:9\ntc-tsa all:ets\ntc-bw all:12\n", "prio-tc: 9 is out of range 0..7"),
        ("parse_dcb_ets", "prio-tc all:0\ntc-tsa all:ets\ntc-bw all:abc\n", "tc-bw: 'abc' is not an integer"),
        ("parse_dcb_app", "dscp-prio ²:3\n", "unknown DSCP name '²'"),  # '²'.isdigit() but int('²') fails
        ("parse_dcb_buffer", f"prio-buffer all:0\nbuffer-size all:{'9' * 400}b\n", "buffer-size: '" + "9" * 20),
        ("parse_size", f"{'9' * 400}Kb", "size: '" + "9" * 20),  # float('9'*400) is inf; round(inf) raised
    ],
)
def test_dcb_malformed(parser, text, message):
    with pytest.raises(ParseError) as exc:
        getattr(_qos_parsers, parser)(text)
    assert message in str(exc.value)


def test_parse_error_names_source_line_and_number():
    exc = ParseError("TC: 9 is out of range 0..7", line="tc: 9 ratelimit: unlimited, tsa: ets\n", lineno=12)
    assert str(exc.within("mlnx_qos -i ens1f0np0 -a")) == (
        "mlnx_qos -i ens1f0np0 -a: TC: 9 is out of range 0..7 (line 12: 'tc: 9 ratelimit: unlimited, tsa: ets')"
    )
    assert str(exc.within("another source")).startswith("mlnx_qos -i ens1f0np0 -a: ")  # the first name stays
    long = ParseError("bad", line="x" * 500, lineno=1)
    assert len(str(long)) < 160


@pytest.mark.parametrize(
    ("func", "value", "want"),
    [
        (_topology_parsers.gid_to_ipv4, "0000:0000:0000:0000:0000:ffff:0a00:", None),  # was ValueError
        (_topology_parsers.gid_to_ipv4, "0000:0000:0000:0000:0000:ffff:zz00:0101", None),  # was ValueError
        (_topology_parsers.parse_speed, "1.2.3 GT/s", None),  # was ValueError
        (_topology_parsers.parse_rate, "4.0.0 Gb/sec", None),  # was ValueError
        (_topology_parsers.parse_int, HUGE, None),
        (_qos_parsers.parse_traffic_class, f"Global tclass={HUGE}", None),  # was ValueError
        (version_numbers, f"{HUGE}.1", ()),  # was ValueError
        (version_numbers, f"2.{HUGE}", ()),  # was ValueError
        (_gpu_operator_values.chart_numbers, f"25.{HUGE}.1", ()),
        (_doca_stack.parse_dkms_status, ",,: installed\n", []),
    ],
)
def test_absent_value_instead_of_a_crash(func, value, want):
    assert func(value) == want


def test_cpulist_range_is_bounded():
    """'0-99999999999' used to build a list of 10**11 ints."""
    with pytest.raises(ParseError, match="out of range"):
        _topology_parsers.parse_cpulist("0-99999999999")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 5000, "nesting deeper than 64 levels at line 1 column 65"),  # was RecursionError
        ('{"a": ' + "[" * 100 + "]" * 100 + "}", "nesting deeper than 64 levels"),
        ('{"a": NaN}', "unexpected token 'NaN' at line 1 column 7"),
        ('{"a": 1e999}', "unexpected token '1e999'"),
        ('{"a": ' + HUGE + "}", "unexpected token"),  # json.loads: int() digit limit
    ],
)
def test_cufile_malformed(text, message):
    with pytest.raises(_cufile.CufileSyntaxError) as exc:
        _cufile.parse(text)
    assert message in str(exc.value)


def test_cufile_big_integer_is_a_number():
    """A 400-digit integer is valid JSON (it overflowed math.isfinite)."""
    assert _cufile.parse('{"a": ' + "1" * 400 + "}")["a"] == int("1" * 400)


def test_gdscheck_keeps_huge_numbers_as_text():
    facts = _gdscheck.parse(f" properties.max_direct_io_size_kb : {HUGE}\n")
    assert facts["config"]["properties.max_direct_io_size_kb"] == HUGE


def test_nccl_version_with_huge_numbers_is_refused_by_name():
    with pytest.raises(_nccl.NcclPlanError, match=r"gpufabric_nccl_version: '2\.999"):
        _nccl.parse_version("2." + HUGE)


@pytest.mark.parametrize(
    ("versions", "message"),
    [(["abc:1.0", "1.0"], "epoch: 'abc' is not an integer"), ([f"{HUGE}:1.0", "1.0"], "epoch: '" + "9" * 20)],
)
def test_package_versions_malformed(versions, message):
    with pytest.raises(ParseError, match=message):
        _doca_index.sort_versions(versions)


def test_xml_with_text_it_cannot_encode_is_a_parse_error():
    """A lone surrogate (undecodable bytes read with surrogateescape) made ElementTree raise UnicodeEncodeError."""
    with pytest.raises(ParseError, match=r"repomd\.xml is not well-formed XML"):
        _doca_index.primary_location("<repomd>\udcff</repomd>")


# The validation parsers (merged in later) read measurement output; each refuses with its own error,
# which validate_report turns into a failed check naming the node and the tool.
def test_perftest_odd_digits_are_left_unread():
    """'²' passed str.isdigit() and made int() raise ValueError; a 5,000-digit row broke int()."""
    text = (VALIDATE / "perftest/write_bw_all_gbits_client.txt").read_text()
    result = _perftest.parse(text.replace("GID index       : 5", "GID index       : \u00b2"))
    assert result["gid_index"] is None and result["rows"]
    header = next(line for line in text.splitlines() if "#bytes" in line)
    with pytest.raises(_perftest.PerftestError, match="no complete row"):
        _perftest.parse(f"{header}\n {HUGE} 5000 1.0 1.0 1.0\n")


def test_nccl_tests_huge_numbers_are_refused_or_skipped():
    """A 5,000-digit rank or row made int() raise ValueError (CPython's digit limit)."""
    text = (VALIDATE / "nccltests/all_reduce_16x_h100_2nodes.txt").read_text()
    result = _nccltests.parse(text.replace("Rank  0 Group", f"Rank {HUGE} Group"))
    assert result["ranks"] == 15  # the unreadable rank line is not a rank
    wrong = text.replace("    0.00      0    123.5", "    0.00    inf    123.5", 1)
    with pytest.raises(_nccltests.NcclTestsError, match="#wrong 'inf' is not a count"):
        _nccltests.parse(wrong)
    with pytest.raises(_nccltests.NcclTestsError, match=r"avg bus bandwidth '\.' is not a number"):
        _nccltests.parse(text + "# Avg bus bandwidth    : . \n")


def test_gdsio_huge_numbers_are_not_a_result():
    line = (VALIDATE / "gdsio/getting_started_write.txt").read_text()
    with pytest.raises(_gdsio.GdsioError, match="no gdsio result line"):
        _gdsio.parse(line.replace("Threads: 1", f"Threads: {HUGE}"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100000, "nested too deep"),  # was RecursionError
        ('{"schema": "gpufabric.gpu_probe", "schema_version": 1, "gpus": [{"h2d_gbps": 1e999}]}', "inf"),
    ],
)
def test_gpu_probe_unreadable_documents(text, message):
    with pytest.raises(_gpuprobe.GpuProbeError, match=message):
        _gpuprobe.load(text)
