"""The NVUE client: what a patch changes against the applied tree (only the settings it names), the
apply flow and its failures (pure, against a fake API with a fake clock), and the HTTP side against
the lab's stand-in (TLS verified, credentials, a second run that changes nothing)."""

from __future__ import annotations

import copy

import pytest
from nvue_standin import PASSWORD, USER, Standin
from support import fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue as _nvue
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue_api as _nvue_api
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan as _qos_plan

PATCH = {
    "qos": {
        "roce": {"enable": "on", "mode": "lossless"},
        "pfc": {"default-global": {"switch-priority": {"3": {}}, "tx": "enable"}},
    },
    "interface": {"swp1": {"link": {"mtu": 9216}}},
}


def leaf_a_patch():
    return _qos_plan.plan(fabric(), switches())["leaf-a"]["qos"]


# ---------------------------------------------------------------------------------- what changes
def test_only_the_settings_the_patch_names_are_compared():
    applied = copy.deepcopy(PATCH)
    applied["qos"]["roce"]["extra"] = "the network team's"
    applied["router"] = {"bgp": {"enable": "on"}}
    applied["qos"]["pfc"]["default-global"]["switch-priority"]["3"] = {"note": "kept"}
    assert _nvue.changes(PATCH, applied) == []


def test_each_missing_or_different_setting_is_a_change_with_both_values():
    applied = {"qos": {"roce": {"enable": "on", "mode": "lossy"}}, "interface": {"swp1": {"link": {"mtu": 1500}}}}
    assert _nvue.changes(PATCH, applied) == [
        {"path": "qos roce mode", "before": "lossy", "after": "lossless"},
        {"path": "qos pfc default-global switch-priority 3", "before": None, "after": {}},
        {"path": "qos pfc default-global tx", "before": None, "after": "enable"},
        {"path": "interface swp1 link mtu", "before": 1500, "after": 9216},
    ]


def test_a_number_and_its_digits_are_one_value():
    assert _nvue.changes({"a": {"mtu": 9216}}, {"a": {"mtu": "9216"}}) == []
    assert _nvue.changes({"a": {"mtu": 9216}}, {"a": {"mtu": "9000"}}) != []
    assert _nvue.changes({"a": {"on": True}}, {"a": {"on": "True"}}) != []


def test_the_diff_shows_each_touched_setting_before_and_after():
    found = _nvue.changes(PATCH, {"interface": {"swp1": {"link": {"mtu": 1500}}}})
    shown = _nvue.diff("leaf-a", found)
    assert "interface swp1 link mtu: 1500\n" in shown["before"]
    assert "interface swp1 link mtu: 9216\n" in shown["after"]
    assert "qos roce mode" not in shown["before"]  # absent before: not shown
    assert "qos roce mode: lossless\n" in shown["after"]
    assert shown["before_header"].startswith("leaf-a")


# ---------------------------------------------------------------------------------- the flow (fake)
class FakeApi:
    """A switch whose revisions reach ``final`` after ``polls`` GETs of their state."""

    def __init__(self, applied, final="applied", polls=1, takes_patch=True):
        self.applied, self.final, self.polls, self.takes_patch = applied, final, polls, takes_patch
        self.calls = []
        self.pending = None

    def request(self, method, path, body=None, rev=None):
        self.calls.append((method, path, rev))
        if (method, path) == ("GET", ""):
            return copy.deepcopy(self.applied)
        if (method, path) == ("POST", "revision"):
            return {"changeset/u/1": {"state": "pending"}}
        if (method, path) == ("PATCH", ""):
            self.pending = body
            return {}
        if method == "PATCH":
            return {"state": "apply"}
        self.polls -= 1
        if self.polls > 0:
            return {"state": "apply"}
        if self.final == "applied" and self.takes_patch:
            for path_, value in _nvue.leaves(self.pending):
                node = self.applied
                for part in path_[:-1]:
                    node = node.setdefault(part, {})
                node[path_[-1]] = value
        return {"state": self.final, "transition": {"issue": {"0": {"message": "bad mtu"}}}}


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def converge(api, check_mode=False, timeout=10):
    clock = Clock()
    return _nvue.converge(api, "leaf-a", PATCH, check_mode, timeout, 1.0, clock.sleep, clock)


def test_apply_creates_patches_applies_and_polls_then_a_rerun_changes_nothing():
    api = FakeApi({}, polls=3)
    first = converge(api)
    assert first["changed"] and first["revision"] == "changeset/u/1"
    assert [c[:2] for c in api.calls] == [
        ("GET", ""),
        ("POST", "revision"),
        ("PATCH", ""),
        ("PATCH", "revision/changeset/u/1"),
        ("GET", "revision/changeset/u/1"),
        ("GET", "revision/changeset/u/1"),
        ("GET", "revision/changeset/u/1"),
        ("GET", ""),
    ]
    assert api.calls[2][2] == "changeset/u/1"
    api.calls = []
    second = converge(api)
    assert (second["changed"], second["changes"], second["revision"]) == (False, [], None)
    assert api.calls == [("GET", "", "applied")]


def test_check_mode_creates_nothing_and_tells_what_would_change():
    api = FakeApi({"interface": {"swp1": {"link": {"mtu": 1500}}}})
    result = converge(api, check_mode=True)
    assert result["changed"] and {"path": "interface swp1 link mtu", "before": 1500, "after": 9216} in result["changes"]
    assert api.calls == [("GET", "", "applied")]


def test_a_failed_apply_names_the_switch_the_revision_and_the_state():
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: revision changeset/u/1 was not applied: its state is "
                       r"apply_fail \(bad mtu\)"):  # fmt: skip
        converge(FakeApi({}, final="apply_fail"))


def test_an_apply_that_never_ends_times_out_naming_the_state():
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: revision changeset/u/1 was not applied within 5 s; its "
                       r"state is still apply"):  # fmt: skip
        converge(FakeApi({}, polls=100), timeout=5)


def test_an_applied_revision_the_switch_does_not_hold_is_an_error():
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: revision changeset/u/1 is applied but the switch does not "
                       r"hold: qos roce enable \(wanted on, found None\)"):  # fmt: skip
        converge(FakeApi({}, takes_patch=False))


def test_an_answer_without_one_revision_is_an_error():
    with pytest.raises(_nvue.NvueError, match="leaf-a: POST /nvue_v1/revision did not answer with one revision"):
        _nvue.revision_id({}, "leaf-a")


# ---------------------------------------------------------------------------------- HTTP (stand-in)
@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("192.0.2.11", ("192.0.2.11", 8765)),
        ("leaf-a:443", ("leaf-a", 443)),
        ("[2001:db8::1]:8443", ("[2001:db8::1]", 8443)),
        ("2001:db8::1", ("[2001:db8::1]", 8765)),
    ],
)
def test_addresses(address, expected):
    assert _nvue_api.host_port(address) == expected


@pytest.mark.parametrize("address", ["leaf-a:http", "leaf-a:0", ":8765", "[::1]:99999"])
def test_bad_addresses(address):
    with pytest.raises(ValueError, match="is not HOST or HOST:PORT"):
        _nvue_api.host_port(address)


@pytest.fixture()
def standin(tmp_path):
    running = Standin(tmp_path / "nvue", applied={"router": {"bgp": {"enable": "on"}}})
    yield running
    running.stop()


def api_of(standin, **kwargs):
    options = {"user": USER, "password": PASSWORD, "ca_path": standin.ca, **kwargs}
    return _nvue_api.NvueApi("leaf-a", standin.address, **options)


def test_the_plan_converges_on_the_stand_in_and_a_rerun_changes_nothing(standin):
    patch = leaf_a_patch()
    assert _nvue.converge(api_of(standin), "leaf-a", patch, True, 10, 0.01)["changed"]
    assert standin.applied() == {"router": {"bgp": {"enable": "on"}}}  # check mode left it alone
    first = _nvue.converge(api_of(standin), "leaf-a", patch, False, 10, 0.01)
    assert first["changed"] and first["revision"].startswith("changeset/cumulus/")
    assert standin.applied()["interface"]["swp1"]["link"]["mtu"] == 9216
    assert standin.applied()["router"] == {"bgp": {"enable": "on"}}  # the rest is merged, not replaced
    again = _nvue.converge(api_of(standin), "leaf-a", patch, False, 10, 0.01)
    assert (again["changed"], again["revision"]) == (False, None)


def test_wrong_credentials_name_the_switch_and_the_variables(standin):
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: GET https://127\.0\.0\.1:\d+/nvue_v1/\?rev=applied: HTTP 401: "
                       r".*gpufabric_switch_api_password"):  # fmt: skip
        _nvue.running(api_of(standin, password="wrong"))


def test_an_untrusted_certificate_is_refused_by_default(standin):
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: GET .*: no answer: .*CERTIFICATE_VERIFY_FAILED.*"
                       r"gpufabric_switch_api_ca_path"):  # fmt: skip
        _nvue.running(api_of(standin, ca_path=None))


def test_a_failed_apply_on_the_stand_in_names_the_switch_and_the_issue(standin):
    patch = {"interface": {"swp1": {"link": {"mtu": 10000}}}}
    with pytest.raises(_nvue.NvueError, match=r"leaf-a: revision changeset/cumulus/\S+ was not applied: its state "
                       r"is apply_fail \(interface swp1 link mtu 10000: outside 552-9216\)"):  # fmt: skip
        _nvue.converge(api_of(standin), "leaf-a", patch, False, 10, 0.01)
