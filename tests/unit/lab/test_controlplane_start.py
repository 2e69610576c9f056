"""lab/controlplane/controlplane.py: how a component that ends during the start is told apart from
one still starting, and the one retry on fresh ports."""

import importlib.util
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "lab" / "controlplane"))  # controlplane.py imports pki beside it
spec = importlib.util.spec_from_file_location("lab_controlplane", REPO / "lab" / "controlplane" / "controlplane.py")
CP = importlib.util.module_from_spec(spec)
spec.loader.exec_module(CP)


@pytest.fixture
def state(tmp_path):
    CP._SPAWNED.clear()
    yield CP.State(tmp_path / "kube", tmp_path / "bin")
    for proc in CP._SPAWNED.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    CP._SPAWNED.clear()


def test_a_component_that_ends_is_reported_with_its_exit_status(state):
    CP.spawn(state, "etcd", ["sh", "-c", "echo bind: address already in use; exit 3"])
    CP._SPAWNED["etcd"].wait()
    assert CP.exited(state, "etcd") == "exit status 3"
    with pytest.raises(CP.EndedEarly, match=r"(?s)etcd ended \(exit status 3\).*address already in use"):
        CP.wait_for("etcd health", lambda: False, 5, state, "etcd")


def test_a_running_component_is_not_taken_for_ended_and_a_signal_is_named(state):
    CP.spawn(state, "kube-apiserver", ["sleep", "30"])
    assert CP.exited(state, "kube-apiserver") is None
    CP._SPAWNED["kube-apiserver"].send_signal(signal.SIGKILL)
    CP._SPAWNED["kube-apiserver"].wait()
    assert CP.exited(state, "kube-apiserver") == "killed by signal 9"


def test_start_is_tried_once_more_on_fresh_ports_after_an_early_end(state, monkeypatch):
    calls = []

    def start(st):
        calls.append((st.root / "ports.json").exists())
        if len(calls) == 1:
            (st.root / "ports.json").write_text('{"apiserver": 6443}\n')
            raise CP.EndedEarly("kube-apiserver ended (exit status 1)")
        return 0

    state.root.mkdir(parents=True)
    monkeypatch.setattr(CP, "start", start)
    monkeypatch.setattr(CP, "stop", lambda *a, **k: 0)
    assert CP.main(["start", "--state", str(state.root), "--bin", str(state.bin)]) == 0
    assert calls == [False, False]  # the second attempt chose its ports afresh


@pytest.mark.parametrize(
    "error, tries", [(CP.EndedEarly("etcd ended (exit status 1)"), 2), (CP.StartError("no etcd binary"), 1)]
)
def test_start_gives_up_after_the_retry_and_does_not_retry_other_errors(state, monkeypatch, capsys, error, tries):
    calls = []

    def start(st):
        calls.append(1)
        raise error

    monkeypatch.setattr(CP, "start", start)
    monkeypatch.setattr(CP, "stop", lambda *a, **k: 0)
    assert CP.main(["start", "--state", str(state.root), "--bin", str(state.bin)]) == 1
    assert len(calls) == tries
    assert "ERROR: start failed: " + str(error) in capsys.readouterr().err


def test_the_node_lease_knob_lengthens_the_lease_and_the_grace_period_together(state, monkeypatch):
    monkeypatch.delenv(CP.NODE_LEASE_VARIABLE, raising=False)
    assert not any(a.startswith("--node-lease-duration") for a in CP.args_kwok(state))
    assert not any(
        a.startswith("--node-monitor-grace")
        for a in CP.args_controller_manager(state, {"sa_key": "k", "ca": "c", "ca_key": "ck"})
    )
    monkeypatch.setenv(CP.NODE_LEASE_VARIABLE, "160")
    assert "--node-lease-duration-seconds=160" in CP.args_kwok(state)
    files = {"sa_key": "k", "ca": "c", "ca_key": "ck"}
    assert "--node-monitor-grace-period=170s" in CP.args_controller_manager(state, files)


@pytest.mark.parametrize("value", ["39", "40s", "-1", "1e3"])
def test_a_wrong_node_lease_stops_the_start_naming_the_variable(state, monkeypatch, value):
    monkeypatch.setenv(CP.NODE_LEASE_VARIABLE, value)
    with pytest.raises(SystemExit, match=CP.NODE_LEASE_VARIABLE + ".*at least 40"):
        CP.start(state)
    assert not CP._SPAWNED
