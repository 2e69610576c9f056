"""The container runtimes' effective locked-memory limit (plugins/modules/service_limits.py and
plugins/module_utils/parsers/limits.py): the limit of the running process is what counts, not what
its unit file says; a service that is not installed or not running has no limit to read.

The /proc/<pid>/limits rows follow proc(5) (the kernel's fs/proc/base.c table: name, soft, hard,
units, in fixed columns); the text below was read on a Debian 12 host (kernel 6.1), with the
locked-memory row of a process started before a LimitMEMLOCK drop-in (8 MiB, systemd's default).
"""

from __future__ import annotations

import pytest
from module_support import fake_runner, run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import limits
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError
from ansible_collections.gpufabric.rollout.plugins.modules import service_limits

LIMITS = """\
Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max stack size            8388608              unlimited            bytes     
Max processes             96369                96369                processes 
Max open files            20000                20000                files     
Max locked memory         {soft:<20} {hard:<20} bytes     
Max nice priority         0                    0                    
Max realtime timeout      unlimited            unlimited            us        
"""  # noqa: W291 (the kernel pads every column)


def test_the_locked_memory_row_is_read_in_bytes_or_unlimited():
    assert limits.proc_limit(LIMITS.format(soft=8388608, hard=8388608)) == {"soft": 8388608, "hard": 8388608}
    assert limits.proc_limit(LIMITS.format(soft="unlimited", hard="unlimited")) == {
        "soft": "unlimited",
        "hard": "unlimited",
    }
    assert limits.proc_limit("Limit  Soft Limit  Hard Limit  Units\n") is None
    with pytest.raises(ParseError, match="Max locked memory"):
        limits.proc_limit(LIMITS.format(soft="lots", hard=1))


@pytest.mark.parametrize(
    "found, planned, enough",
    [
        ("unlimited", "unlimited", True),
        (8388608, "unlimited", False),
        (8388608, "8192", True),
        (8388608, "8193", False),
    ],
)
def test_an_effective_limit_is_compared_with_the_planned_one_in_kib(found, planned, enough):
    assert limits.at_least(found, planned) is enough


def test_the_module_reads_the_running_process_and_leaves_absent_services_alone(tmp_path, monkeypatch, capsys):
    (tmp_path / "proc" / "4242").mkdir(parents=True)
    (tmp_path / "proc" / "4242" / "limits").write_text(LIMITS.format(soft=8388608, hard=8388608))
    show = ("systemctl", "show", service_limits.PROPERTIES, "--")
    runner = fake_runner(
        {
            (
                *show,
                "containerd.service",
            ): "Id=containerd.service\nLoadState=loaded\nActiveState=active\nMainPID=4242\n",
            (*show, "crio.service"): "Id=crio.service\nLoadState=not-found\nActiveState=inactive\nMainPID=0\n",
        }
    )
    got = service_limits.read(["containerd.service", "crio.service"], runner, Sysroot(str(tmp_path)))
    assert got == [
        {
            "unit": "containerd.service",
            "installed": True,
            "active": True,
            "main_pid": 4242,
            "memlock": {"soft": 8388608, "hard": 8388608},
        },
        {"unit": "crio.service", "installed": False, "active": False, "main_pid": 0, "memlock": None},
    ]
    rc, result = run_module(service_limits, {"units": ["crio.service"]}, monkeypatch, capsys, runner)
    assert rc == 0 and result["changed"] is False
    assert result["services"][0]["installed"] is False
