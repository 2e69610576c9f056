"""Port ranges of the switch intent (module_utils/switch/ports.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports


def test_nvue_range_in_order():
    assert ports.expand("swp1-4", "nvue") == ["swp1", "swp2", "swp3", "swp4"]


def test_sonic_range_with_a_step_and_a_second_range():
    assert ports.expand("Ethernet0-12:4, Ethernet64", "sonic") == [
        "Ethernet0",
        "Ethernet4",
        "Ethernet8",
        "Ethernet12",
        "Ethernet64",
    ]


@pytest.mark.parametrize(
    "text, os_name, words",
    [
        ("swp1-4", "sonic", "sonic ports are named EthernetN"),
        ("Ethernet0", "nvue", "nvue ports are named swpN"),
        ("swp4-1", "nvue", "FIRST <= LAST"),
        ("swp1-9999", "nvue", "LAST <= 4096"),
        ("swp1-3,swp3", "nvue", "names swp3 twice"),
        ("swp", "nvue", "is not swpFIRST"),
        ("", "nvue", "names no port"),
        ("Ethernet0-8:0", "sonic", "STEP >= 1"),
    ],
)
def test_bad_ranges_say_what_is_wrong(text, os_name, words):
    with pytest.raises(ports.PortRangeError) as refused:
        ports.expand(text, os_name)
    assert words in str(refused.value)


def test_compress_is_the_inverse_for_consecutive_ports():
    assert ports.compress(["swp3", "swp1", "swp2", "swp7", "swp10", "swp9"]) == "swp1-3,swp7,swp9-10"
    assert ports.compress(ports.expand("swp1-32", "nvue")) == "swp1-32"


def test_compress_writes_steps_back():
    assert ports.compress(ports.expand("Ethernet0-28:4", "sonic")) == "Ethernet0-28:4"
    assert ports.compress(["Ethernet0", "Ethernet8"]) == "Ethernet0,Ethernet8"
    assert ports.compress(["swp5"]) == "swp5"
