"""perftest, nccl-tests and gdsio parsers on real output (fixtures/README.md), and fuzzing:
any input either parses or raises the parser's own error type."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest

FIX = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def text(name):
    return (FIX / name).read_text()


def test_perftest_all_sizes_in_gbits_from_the_gpu_operator_docs():
    r = _perftest.parse(text("perftest/write_bw_all_gbits_client.txt"))
    assert r["test"] == "RDMA_Write BW Test" and r["role"] == "client" and r["unit"] == "Gb/sec"
    assert (r["device"], r["link_type"], r["gid_index"], r["mtu"], r["qps"]) == ("mlx5_0", "Ethernet", 5, 1024, 1)
    assert [row["bytes"] for row in r["rows"]] == [2**i for i in range(1, 24)]
    assert r["rows"][0] == {
        "bytes": 2,
        "iterations": 5000,
        "bw_peak_gbps": 0.11,
        "bw_avg_gbps": 0.11,
        "msg_rate_mpps": 6.897101,
    }
    assert r["bw_avg_gbps"] == 92.46 and r["bw_avg_bytes"] == 16384


def test_perftest_duration_run_with_tabs_and_post_list():
    r = _perftest.parse(text("perftest/write_bw_postlist_duration_gbits.txt"))
    assert r["test"] == "RDMA_Write Post List BW Test" and r["device"] == "ib0" and r["gid_index"] == 2
    assert r["rows"] == [
        {"bytes": 8, "iterations": 224958464, "bw_peak_gbps": 0.0, "bw_avg_gbps": 0.48, "msg_rate_mpps": 7.498617}
    ]


def test_perftest_mib_rows_are_converted_to_gbits_and_cuda_is_recognised():
    # The issue #241 CUDA preamble (real) completed with a result table in perftest's MiB format
    # (RESULT_FMT / REPORT_FMT of src/perftest_parameters.h).
    head = text("perftest/write_bw_cuda_server_truncated.txt").rsplit("\n", 1)[0]
    tail = (
        "\n CQ Moderation   : 1\n Mtu             : 4096[B]\n Link type       : Ethernet\n GID index       : 3\n"
        + "-" * 87
        + "\n #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
        + " 33554432    5000             11205.30            11204.87\t\t     0.000350\n"
    )
    r = _perftest.parse(head + tail)
    assert r["role"] == "server" and r["unit"] == "MiB/sec"
    assert r["cuda"] == {"index": 0, "name": "NVIDIA A30"}
    assert r["bw_avg_gbps"] == pytest.approx(11204.87 * 1048576 * 8 / 1e9)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("perftest/write_bw_cuda_server_truncated.txt", "no perftest result header"),
        ("perftest/write_bw_duration_mb_truncated.txt", "no complete row"),
    ],
)
def test_perftest_truncated_outputs_raise_the_documented_error(name, message):
    with pytest.raises(_perftest.PerftestError, match=message):
        _perftest.parse(text(name))


def test_perftest_command_and_its_inverse():
    argv = _perftest.command(
        "ib_write_bw",
        "mlx5_3",
        server="10.3.2.1",
        port=18521,
        gid_index=3,
        size=1 << 20,
        duration=5,
        use_cuda=3,
        cuda_dmabuf=True,
    )
    assert argv == [
        "ib_write_bw",
        "-d",
        "mlx5_3",
        "-i",
        "1",
        "-p",
        "18521",
        "-q",
        "1",
        "-F",
        "--report_gbits",
        "-x",
        "3",
        "-s",
        "1048576",
        "-D",
        "5",
        "--use_cuda=3",
        "--use_cuda_dmabuf",
        "10.3.2.1",
    ]
    opts = _perftest.options_of(argv)
    assert (opts["device"], opts["port"], opts["gid_index"], opts["use_cuda"], opts["server"]) == (
        "mlx5_3",
        18521,
        3,
        3,
        "10.3.2.1",
    )
    for bad in ({"tool": "ib_atomic_bw"}, {"device": "mlx5_0; rm"}, {"all_sizes": True, "size": 8}):
        kwargs = {"tool": "ib_write_bw", "device": "mlx5_0", **bad}
        with pytest.raises(_perftest.PerftestError):
            _perftest.command(kwargs.pop("tool"), kwargs.pop("device"), **kwargs)


def test_nccl_tests_two_h100_nodes():
    r = _nccltests.parse(text("nccltests/all_reduce_16x_h100_2nodes.txt"))
    assert r["ranks"] == 16 and r["hosts"] == ["ztan-mig-235z", "ztan-mig-gq73"] and r["nthread"] == 1
    assert len(r["rows"]) == 31 and r["rows"][0]["bytes"] == 8 and r["rows"][-1]["bytes"] == 8 << 30
    last = r["rows"][-1]
    assert last["out_of_place"] == {"time_us": 47535.0, "algbw_gbps": 180.71, "busbw_gbps": 338.82, "wrong": 0}
    assert last["in_place"]["busbw_gbps"] == 337.35 and last["redop"] == "sum" and last["root"] == "-1"
    assert r["avg_busbw_gbps"] == 70.742 and r["out_of_bounds"] == {"count": 0, "ok": True}
    assert r["wrong_total"] == 0 and r["peak_busbw_gbps"] == 338.82


def test_nccl_tests_wrong_results_are_counted():
    r = _nccltests.parse(text("nccltests/all_reduce_16x_gh200_wrong.txt"))
    assert r["version"] == "2.17.9" and r["nccl"] == "2.29.2" and r["collective"] == "all_reduce_perf"
    assert len(r["hosts"]) == 4 and r["ranks"] == 16
    bad = [row["bytes"] for row in r["rows"] if row["out_of_place"]["wrong"]]
    assert bad == [2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20]
    assert r["rows"][21]["in_place"]["wrong"] == 9609
    assert r["wrong_total"] == sum((row[k]["wrong"] or 0) for row in r["rows"] for k in ("out_of_place", "in_place"))
    assert r["avg_busbw_gbps"] is None and r["out_of_bounds"] is None


def test_nccl_tests_without_checking_and_without_redop_columns():
    out = (
        "#       size         count      type     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "   134217728       2097152     float   500.10  268.38  234.83    N/A   498.00  269.51  235.82    N/A\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 235.325 OK\n"
    )
    r = _nccltests.parse(out)
    assert r["rows"][0]["out_of_place"]["wrong"] is None and "redop" not in r["rows"][0]
    assert r["avg_busbw_gbps"] == 235.325 and r["avg_check"] == "OK"


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("", "no nccl-tests column header"),
        ("#       size         count      type   redop    root     time   algbw   busbw #wrong\n", "no rows"),
        ("#  size count type redop root time algbw busbw #wrong\n  1024 256 float sum -1 3.0\n", "fields"),
    ],
)
def test_nccl_tests_errors(out, message):
    with pytest.raises(_nccltests.NcclTestsError, match=message):
        _nccltests.parse(out)


def test_busbw_factor_and_version_codes():
    assert _nccltests.busbw_factor("all_reduce_perf", 16) == pytest.approx(1.875)
    assert _nccltests.busbw_factor("all_gather", 8) == pytest.approx(0.875)
    assert _nccltests.nccl_version("22903") == "2.29.3" and _nccltests.nccl_version("2708") == "2.7.8"
    with pytest.raises(_nccltests.NcclTestsError):
        _nccltests.busbw_factor("hypercube", 4)


def test_gdsio_nvidia_guide_lines():
    r = _gdsio.parse(text("gdsio/config_guide_dgx2.txt"))
    assert [x["io_type"] for x in r] == ["READ", "READ", "RANDREAD", "RANDREAD"]
    assert r[0] == {
        "io_type": "READ",
        "xfer_type": "GPUD",
        "threads": 8,
        "data_kib": 818796544,
        "dataset_kib": 4096000,
        "io_size_kib": [1024],
        "throughput_gib_s": 6.524658,
        "throughput_gbps": pytest.approx(6.524658 * 2**30 / 1e9),
        "avg_latency_us": 1197.370995,
        "ops": 799606,
        "total_time_s": 119.679102,
    }
    assert r[3]["threads"] == 128 and r[3]["io_size_kib"] == [4]
    w = _gdsio.parse(text("gdsio/getting_started_write.txt"))
    assert w[0]["io_type"] == "WRITE" and w[0]["data_kib"] == 8 and w[0]["ops"] == 2


def test_gdsio_wrapped_line_and_random_io_sizes():
    r = _gdsio.parse(
        "IoType: READ XferType: GPUD Threads: 16 DataSetSize: 103993344/104857600(KiB)\n"
        "IOSize: 16384-32768-4096(KiB) Throughput: 6.168589 GiB/sec, Avg_Latency: 60200.233629 usecs\n"
        "ops: 4236 total_time 16.077547 secs\n"
    )
    assert r[0]["io_size_kib"] == [16384, 32768, 4096] and r[0]["ops"] == 4236


def test_gdsio_errors_and_command():
    with pytest.raises(_gdsio.GdsioError, match="no gdsio result line"):
        _gdsio.parse("Data Verification Success\n")
    assert _gdsio.command("/mnt/weka/x", 2, 0, threads=8, duration=30, numa=1) == [
        "gdsio",
        "-D",
        "/mnt/weka/x",
        "-d",
        "2",
        "-w",
        "8",
        "-s",
        "1G",
        "-i",
        "1M",
        "-x",
        "0",
        "-I",
        "0",
        "-T",
        "30",
        "-n",
        "1",
    ]
    for args in (("/m", 0, 7), ("relative", 0, 0)):
        with pytest.raises(_gdsio.GdsioError):
            _gdsio.command(*args)
    with pytest.raises(_gdsio.GdsioError, match="file_size"):
        _gdsio.command("/m", 0, 1, file_size="1T")


PARSERS = [
    (_perftest.parse, _perftest.PerftestError),
    (_nccltests.parse, _nccltests.NcclTestsError),
    (_gdsio.parse, _gdsio.GdsioError),
]
REAL = sorted(str(p.relative_to(FIX)) for p in FIX.glob("*/*.txt"))


@FUZZ
@given(st.text(max_size=400))
def test_fuzz_random_text(data):
    for parse, error in PARSERS:
        with contextlib.suppress(error):
            parse(data)


@FUZZ
@given(st.sampled_from(REAL), st.data())
def test_fuzz_mutated_fixtures(name, data):
    lines = text(name).splitlines(keepends=True)
    for _step in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "cut", "junk", "swap"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        elif op == "junk":
            lines[i] = data.draw(st.text(max_size=60)) + "\n"
        else:
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    mutated = "".join(lines)
    for parse, error in PARSERS:
        try:
            result = parse(mutated)
        except error:
            continue
        rows = result if isinstance(result, list) else result["rows"]
        assert rows, "a parser returned a result without rows"
