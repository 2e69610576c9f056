"""lab/core_venv.sh: the checkout's copy of an older core's venv (.lab/cores/<version>) is made once
per cached venv and then left alone. make test calls the script from both lanes (the oldest
core's main job in one, the matrix in the other); when the second call remade the copy, the first
lane's running ansible-playbook lost its files half-way ("Unknown profile name", "Cannot resolve
ansible.builtin.include_tasks"). A new cached venv (its key changed) still replaces the copy.

The script runs in a temporary checkout (lab/ copied, a stand-in .venv) against a cache made here,
so nothing is installed."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VERSION = "2.19.14"


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "lab").mkdir(parents=True)
    for name in ("common.sh", "core_venv.sh"):
        shutil.copy2(REPO / "lab" / name, root / "lab" / name)
    (root / "requirements.txt").write_text("ansible-core==2.21.5\n")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return root


def cached_venv(root: Path, cache: Path) -> Path:
    """The cached venv the script looks for (its key as the script computes it), made complete."""
    parts = [root / "requirements.txt", root / "lab" / "core_venv.sh", root / ".venv" / "pyvenv.cfg"]
    data = b"".join(p.read_bytes() for p in parts) + f"{VERSION}\n".encode()
    cached = cache / "venvs" / f"core-{VERSION}-{hashlib.sha256(data).hexdigest()[:16]}"
    (cached / "bin").mkdir(parents=True)
    (cached / "pyvenv.cfg").write_text(f"home = {cached}\n")
    (cached / "marker").write_text("a file of the venv\n")
    (cached / ".complete").touch()
    return cached


def run(root: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, GPUFABRIC_CACHE_DIR=str(cache))
    return subprocess.run(
        ["bash", "lab/core_venv.sh", VERSION], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_a_second_call_leaves_the_copy_in_use_alone(tmp_path):
    root, cache = checkout(tmp_path), tmp_path / "cache"
    cached = cached_venv(root, cache)
    first = run(root, cache)
    assert first.returncode == 0, first.stderr
    dest = root / ".lab" / "cores" / VERSION
    assert (dest / "marker").is_file()
    assert (dest / ".source").read_text().strip() == str(cached)
    inode = (dest / "marker").stat().st_ino
    stamp = dest.stat().st_ino
    second = run(root, cache)
    assert second.returncode == 0, second.stderr
    assert f"{dest} is up to date" in second.stderr
    assert dest.stat().st_ino == stamp and (dest / "marker").stat().st_ino == inode


def test_a_new_cached_venv_replaces_the_copy(tmp_path):
    root, cache = checkout(tmp_path), tmp_path / "cache"
    cached_venv(root, cache)
    assert run(root, cache).returncode == 0
    (root / "requirements.txt").write_text("ansible-core==2.21.6\n")  # a new key
    newer = cached_venv(root, cache)
    done = run(root, cache)
    assert done.returncode == 0, done.stderr
    dest = root / ".lab" / "cores" / VERSION
    assert (dest / ".source").read_text().strip() == str(newer)
    assert "is up to date" not in done.stderr
