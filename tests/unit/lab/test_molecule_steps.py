"""lab/molecule/steps.py: molecule's output reaches the log unchanged, and each step is timed from
its announcement to the next step's (or the end of the output)."""

import importlib.util
import io
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("lab_molecule_steps", REPO / "lab" / "molecule" / "steps.py")
STEPS = importlib.util.module_from_spec(spec)
spec.loader.exec_module(STEPS)

OUTPUT = """\
INFO     [host_layer > create] Executing
PLAY [Create lab nodes] ***
INFO     [host_layer > converge] Executing
TASK [gpufabric.rollout.roce : Apply the QoS plan] ***
INFO     [host_layer > verify] Executing
INFO     [host_layer > verify] Executing Testinfra tests found in molecule/host_layer/tests/...
INFO     [host_layer > side_effect] Executing
INFO     [host_layer > verify] Executing
"""


def timed(tmp_path, monkeypatch, output):
    """steps.py run over `output` with a clock that moves 10 s each time it is read (at the start, at each
    step, at the end): the log's text and the steps file's lines."""
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(STEPS.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(STEPS.sys, "stdin", io.StringIO(output))
    log, steps = tmp_path / "s.log", tmp_path / "s.log.steps"
    STEPS.main(str(log), str(steps))
    return log.read_text(), steps.read_text().splitlines()


def test_the_log_is_the_output_and_every_step_is_timed_until_the_next(tmp_path, monkeypatch):
    log, steps = timed(tmp_path, monkeypatch, OUTPUT)

    assert log == OUTPUT
    # The verifier's second announcement is not a step of its own.
    assert steps == ["create 10", "converge 10", "verify 10", "side_effect 10", "verify 10"]


def test_the_coloured_arrow_form_is_timed_too(tmp_path, monkeypatch):
    # What molecule writes when TERM names a terminal: colour codes around "scenario ➜ step: Executing".
    coloured = (
        "\x1b[36mINFO    \x1b[0m \x1b[32mhost_layer\x1b[0m \u279c \x1b[33mconverge\x1b[0m: \x1b[36mExecuting\x1b[0m\n"
        "\x1b[36mINFO    \x1b[0m \x1b[32mhost_layer\x1b[0m \u279c \x1b[33mverify\x1b[0m: Executing Testinfra tests\n"
        "\x1b[36mINFO    \x1b[0m \x1b[32mhost_layer\x1b[0m \u279c \x1b[33mdestroy\x1b[0m: \x1b[36mExecuting\x1b[0m\n"
    )
    log, steps = timed(tmp_path, monkeypatch, coloured)

    assert log == coloured
    assert steps == ["converge 10", "destroy 10"]
