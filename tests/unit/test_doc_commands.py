"""Every shell command README.md and docs/*.md show is run by something, so a claim cannot drift.

Each command of a ```bash, ```sh, ```shell or ```console block must match an entry of RUNNERS,
which names the test or CI step that runs it and the text in that runner's file that shows it
does (checked here, so an entry cannot outlive its runner). The cheap and safe commands
(ansible-doc, --syntax-check, make help, --help) are run here, in a fresh shell with only PATH set,
from the repository root. A command no entry matches fails, and so does an entry nothing matches.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_FENCE = re.compile(r"^```(bash|sh|shell|console)[ \t]*\n(.*?)^```", re.S | re.M)
ANY_FENCE = re.compile(r"^```([A-Za-z]*)[ \t]*\n(.*?)^```", re.S | re.M)
# A block without a shell language whose first word is one of these hides a command from the test.
COMMAND_WORDS = ("ansible", "ansible-playbook", "ansible-galaxy", "ansible-doc", "make", "lab/", "podman", "python3")


@dataclass(frozen=True)
class Runner:
    pattern: str  # a full match of the command (after comments and prompts are removed)
    where: str  # the test or CI step that runs it
    evidence: tuple[tuple[str, str], ...]  # (file, text it holds) showing that the runner runs it
    run_here: bool = False  # cheap and safe: this test runs it


CI = ".ci/run"
CHECK = "lab/check.sh"
BUILD = "tests/build/check.sh"
RUNNERS = (
    Runner(
        r"make lab",
        "lab/check.sh step 1 (make lab-test; make test runs it as make lab-test-matrix)",
        (("Makefile", "lab/lab.sh up"), (CHECK, '"${LAB_ROOT}/lab.sh" up')),
    ),
    Runner(
        r"make site",
        "lab/check.sh step 2, the second run (make lab-test; in make lab-test-matrix on the oldest core)",
        (("Makefile", "lab/lab.sh site"), (CHECK, '"${LAB_ROOT}/lab.sh" site')),
    ),
    Runner(
        r'make site LAB_PLAYBOOK_ARGS="--check --diff"',
        "lab/check.sh step 3, check mode (make lab-test)",
        (("lab/lab.sh", "again site.yml ${LAB_PLAYBOOK_ARGS:-}"), (CHECK, '"${LAB_ROOT}/lab.sh" site --check')),
    ),
    Runner(
        r"lab/lab.sh site --check --diff",
        "lab/check.sh step 3, check mode (make lab-test)",
        ((CHECK, '"${LAB_ROOT}/lab.sh" site --check'),),
    ),
    Runner(
        r"make lab-down",
        "lab/check.sh removes the lab when it ends (make lab-test)",
        (("Makefile", "lab/lab.sh down"), (CHECK, '"${LAB_ROOT}/lab.sh" down')),
    ),
    Runner(r"make test", "CI (.ci/run)", ((CI, "make test"),)),
    Runner(r"make test-fast", "make test (its first step)", (("Makefile", "test: test-fast"), (CI, "make test"))),
    Runner(
        r"make venv", "make test (every target needs the toolchain)", (("Makefile", "tools: venv"), (CI, "make test"))
    ),
    Runner(r"make help", "this test", (), run_here=True),
    Runner(
        r"make ee",
        "its two commands, run by tests/ee/build.sh (make ee-build, in make test)",
        (
            ("mk/ee.mk", "ansible-galaxy collection build --force --output-path dist"),
            ("mk/ee.mk", "ansible-builder build -f execution-environment.yml -c context"),
            ("tests/ee/build.sh", "ansible-builder build -f"),
            ("Makefile", "ee-build controlplane-test"),
        ),
    ),
    Runner(
        r"ansible-galaxy collection build( --force --output-path dist)?",
        "tests/build/check.sh (make build-check)",
        ((BUILD, "ansible-galaxy collection build --force --output-path"),),
    ),
    Runner(
        r"ansible-galaxy collection install gpufabric-rollout-[0-9.]+\.tar\.gz",
        "tests/build/check.sh",
        ((BUILD, "ansible-galaxy collection install"),),
    ),
    Runner(
        r"ansible-builder build -f execution-environment\.yml -c context -t \S+ --container-runtime podman",
        "tests/ee/build.sh (make ee-build)",
        (("tests/ee/build.sh", "--container-runtime podman"),),
    ),
    Runner(
        r"ansible-playbook gpufabric\.rollout\.site -i inventory/example --syntax-check", "this test", (), run_here=True
    ),
    Runner(
        r"ansible-playbook (gpufabric\.rollout\.site|site\.yml) -i inventory/\S+",
        "tests/build/check.sh (by name, installed) and lab/check.sh (site.yml on the lab)",
        ((BUILD, "ansible-playbook gpufabric.rollout.site -i"), ("lab/lab.sh", "again site.yml")),
    ),
    Runner(
        r"ansible-playbook -i 'localhost,' -c local playbooks/audit\.yml",
        "tests/unit/validate/test_audit_playbook.py (audit.yml with a local connection on a node's hardware tree)",
        (("tests/unit/validate/test_audit_playbook.py", '"localhost,",'),),
    ),
    Runner(
        r"ansible-playbook gpufabric\.rollout\.snapshot -i \S+ -b -e snapshot_dest=\S+",
        "tests/build/check.sh (the installed snapshot playbook)",
        ((BUILD, "ansible-playbook gpufabric.rollout.snapshot"),),
    ),
    Runner(
        r"ansible-playbook playbooks/upgrade\.yml -i \S+ (--check|\[-e gpufabric_upgrade_serial=\S+\])",
        "molecule/upgrade (make molecule-test)",
        (
            ("molecule/upgrade/tasks/run_upgrade.yml", "default('upgrade.yml')"),
            ("molecule/upgrade/side_effect.yml", "upgrade.yml --check"),
        ),
    ),
    Runner(
        r"ansible-playbook playbooks/awx\.yml( -e (\w+=\"[^\"]*\"|\S+))+",
        "tests/unit/awx/test_awx_playbook.py (every task rendered)",
        (("tests/unit/awx/test_awx_playbook.py", '"playbooks" / "awx.yml"'),),
    ),
    Runner(
        r"ansible-playbook playbooks/switches\.yml -i \S+( --check --diff)?",
        "tests/unit/plan/test_switch_playbooks.py (against the lab's NVUE stand-in: --check, apply, rerun)",
        (("tests/unit/plan/test_switch_playbooks.py", 'run("switches.yml", "--check", "--diff")'),),
    ),
    Runner(
        r"ansible-playbook playbooks/fabric_check\.yml -i \S+( -e gpufabric_switch_export_dir=\S+)?",
        "tests/unit/plan/test_switch_playbooks.py (from the stand-in's API and from an export directory)",
        (("tests/unit/plan/test_switch_playbooks.py", '"-e", f"gpufabric_switch_export_dir={exports}"'),),
    ),
    Runner(
        r"NVUE_STANDIN_PASSWORD=\S+ python3 lab/nvue/standin\.py --state-dir \S+ --user \S+",
        "tests/unit/switch/test_nvue_standin.py (the script started as documented)",
        (("tests/unit/switch/test_nvue_standin.py", '"--state-dir", str(state), "--user", USER'),),
    ),
    Runner(r"ansible-doc -t filter -l gpufabric\.rollout", "this test", (), run_here=True),
    Runner(r"ansible-doc -t role gpufabric\.rollout\.plan -e node_intent", "this test", (), run_here=True),
    Runner(r"export( [A-Z_]+=\S+)+", "shell set-up (variables only); the commands after it are checked", ()),
)


def _strip_comment(line: str) -> str:
    """The line without a trailing `# comment` (a `#` that starts a word, outside quotes)."""
    for match in re.finditer(r"(^|\s)#", line):
        prefix = line[: match.start()]
        if prefix.count('"') % 2 == 0 and prefix.count("'") % 2 == 0:
            return prefix.strip()
    return line.strip()


def commands(block: str, console: bool) -> list[str]:
    """The commands of one shell block: continuations joined, prompts and comments removed, `&&` split."""
    joined = re.sub(r"\s*\\\n\s*", " ", block)
    found = []
    for raw in joined.splitlines():
        line = raw.strip()
        if console:
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        line = _strip_comment(line)
        found.extend(part.strip() for part in re.split(r"\s&&\s|;\s", line) if part.strip())
    return found


def documented() -> list[tuple[str, str]]:
    """(document, command) for every command in a shell block of the docs."""
    found = []
    for doc in DOCS:
        for match in SHELL_FENCE.finditer(doc.read_text(encoding="utf-8")):
            for command in commands(match.group(2), match.group(1) == "console"):
                found.append((str(doc.relative_to(REPO)), command))
    return found


def runner_of(command: str) -> Runner | None:
    for runner in RUNNERS:
        if re.fullmatch(runner.pattern, command):
            return runner
    return None


def test_the_docs_show_commands():
    """The extraction finds the commands a user reads first (guards against a regex that finds none)."""
    shown = {command for _doc, command in documented()}
    assert {"make lab", "make test"} <= shown, sorted(shown)


@pytest.mark.parametrize(("doc", "command"), documented(), ids=lambda v: v[:60])
def test_every_documented_command_has_a_runner(doc, command):
    runner = runner_of(command)
    assert runner is not None, (
        f"{doc} shows `{command}`, which no test or CI step runs: add it to RUNNERS in {Path(__file__).name} "
        "with the step that runs it, or correct the docs"
    )


@pytest.mark.parametrize("runner", RUNNERS, ids=lambda r: r.pattern[:50])
def test_every_runner_is_used_and_still_runs_it(runner):
    matched = [command for _doc, command in documented() if re.fullmatch(runner.pattern, command)]
    assert matched, f"no documented command matches `{runner.pattern}`: remove the entry"
    for path, text in runner.evidence:
        content = (REPO / path).read_text(encoding="utf-8")
        assert text in content, f"{runner.where}: {path} no longer holds {text!r}, so it may not run `{matched[0]}`"


def test_no_command_hides_in_a_block_without_a_shell_language():
    hidden = []
    for doc in DOCS:
        for match in ANY_FENCE.finditer(doc.read_text(encoding="utf-8")):
            if match.group(1) in ("bash", "sh", "shell", "console"):
                continue
            first = match.group(2).lstrip().split(maxsplit=1)[:1]
            if first and first[0].startswith(COMMAND_WORDS):
                hidden.append(f"{doc.relative_to(REPO)}: ```{match.group(1)} block starting `{first[0]}`")
    assert not hidden, "commands in blocks the check does not read (mark them ```bash):\n" + "\n".join(hidden)


def test_the_extraction():
    block = 'make lab    # a comment\nexport A=1 B="x # y"\nansible-galaxy collection build && echo \\\n  done\n'
    assert commands(block, console=False) == [
        "make lab",
        'export A=1 B="x # y"',
        "ansible-galaxy collection build",
        "echo done",
    ]
    assert commands("$ make help\nusage line\n", console=True) == ["make help"]


def _fresh_shell_path() -> str:
    return os.pathsep.join(
        [str(REPO / ".venv" / "bin"), str(REPO / ".tools" / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]
    )


CHEAP = sorted({command for _doc, command in documented() if (r := runner_of(command)) is not None and r.run_here})


@pytest.mark.parametrize("command", CHEAP)
def test_cheap_documented_command_runs_in_a_fresh_shell(command):
    """Run as a user would in a new shell with the toolchain on PATH: no other variable is set."""
    result = subprocess.run(
        ["env", "-i", f"PATH={_fresh_shell_path()}", "bash", "--noprofile", "--norc", "-c", command],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (
        f"`{command}` failed in a fresh shell (rc {result.returncode}):\n{result.stdout}\n{result.stderr}"
    )
    assert result.stdout.strip(), f"`{command}` printed nothing"
    if command.startswith("ansible-doc -t filter -l"):
        assert "gpufabric.rollout." in result.stdout, result.stdout


def test_every_relative_link_of_the_docs_points_into_the_repository():
    """A link in README.md or docs/*.md names a file of the repository (no document left outside it)."""
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target):
                continue
            path = (doc.parent / target).resolve()
            if not path.exists() or REPO not in path.parents:
                broken.append(f"{doc.relative_to(REPO)}: {target}")
    assert not broken, "links to files the repository does not have:\n" + "\n".join(broken)
