# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host access for every module: one ``Sysroot`` for files, one ``Runner`` for commands.

``Sysroot`` reads and writes paths below a root (``/`` on a live host, an unpacked snapshot or a
lab node's hardware tree elsewhere), resolving symlinks inside the root: sysfs links are
relative, but a snapshot taken with absolute links must not escape to the host's own /sys.
Reads never raise for a missing or unreadable file; they return their "absent" value.

``Runner`` runs external commands as argv lists (never a shell string) with ``LC_ALL=C``. A module
builds it from its AnsibleModule (``Runner.for_module``), the boot-time RoCE script from
subprocess (``Runner.local``), and tests from two plain functions.

Pure Python (>= 3.8), stdlib only, no AnsibleModule import; copied onto hosts with the RoCE
apply engine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Callable, Dict, List, Optional, Tuple

C_LOCALE = {"LC_ALL": "C"}
RunResult = Tuple[int, str, str]


class CommandError(Exception):
    """A command exited non-zero; the message names the command line and what it printed."""

    def __init__(self, argv: List[str], rc: int, output: str) -> None:
        self.argv = list(argv)
        self.rc = rc
        self.output = output.strip()
        super().__init__(f"{' '.join(self.argv)} failed (rc={rc}): {self.output}")


class Runner:
    """Runs commands: ``run(argv) -> (rc, stdout, stderr)``, ``which(name) -> path or None``."""

    def __init__(self, run: Callable[[List[str]], RunResult], which: Callable[[str], Optional[str]]) -> None:
        self._run = run
        self._which = which

    @classmethod
    def for_module(cls, module: Any) -> Runner:
        """Commands through ``AnsibleModule.run_command``; tools found by ``get_bin_path`` (PATH and sbin)."""
        return cls(
            run=lambda argv: module.run_command(argv, environ_update=dict(C_LOCALE)),
            which=module.get_bin_path,
        )

    @classmethod
    def local(cls, path: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> Runner:
        """Commands through subprocess; tools looked up on ``path`` (default: $PATH)."""
        environ = dict(os.environ, **(env or {}), **C_LOCALE)
        if path is not None:
            environ["PATH"] = path

        def which(name: str) -> Optional[str]:
            return shutil.which(name, path=environ.get("PATH"))

        def run(argv: List[str]) -> RunResult:
            exe = argv[0] if os.sep in argv[0] else which(argv[0])
            if exe is None:
                return 127, "", f"{argv[0]}: command not found"
            # The controller's runner (no AnsibleModule here, so no run_command to call).
            proc = subprocess.run(  # pylint: disable=ansible-bad-function
                [exe, *argv[1:]], capture_output=True, text=True, env=environ, check=False
            )
            return proc.returncode, proc.stdout, proc.stderr

        return cls(run=run, which=which)

    def run(self, argv: List[str]) -> RunResult:
        return self._run(list(argv))

    def which(self, name: str) -> Optional[str]:
        return self._which(name)

    def check(self, argv: List[str]) -> str:
        """stdout of ``argv``; CommandError when it exits non-zero."""
        rc, out, err = self.run(argv)
        if rc != 0:
            raise CommandError(argv, rc, err or out)
        return out

    def output(self, name: str, args: List[str]) -> Optional[str]:
        """stdout of ``name args`` when the tool is installed and succeeds, else None."""
        path = self.which(name)
        if not path:
            return None
        rc, out, _err = self.run([path, *args])
        return out if rc == 0 else None


class Sysroot:
    """Files below ``root``; every path argument is relative to it (a leading ``/`` is ignored)."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root or "/")
        self._dirs: Dict[str, Optional[str]] = {}

    def real(self, rel: str, _hops: int = 0) -> Optional[str]:
        """Root-relative path of ``rel`` with every symlink resolved inside the root.

        Absolute link targets are taken as root-relative. Each distinct prefix is looked at once
        (cached), so a walk over sysfs costs about one lstat per directory. None on a link loop.
        """
        rel = os.path.normpath(rel.strip("/")) if rel.strip("/") else ""
        if rel in ("", "."):
            return ""
        if rel.startswith(".."):
            rel = rel.lstrip("./") if rel.strip("./") else ""
            return self.real(rel, _hops)
        if rel in self._dirs:
            return self._dirs[rel]
        head, _sep, tail = rel.rpartition("/")
        base = self.real(head, _hops) if head else ""
        if base is None:
            return None
        cand = f"{base}/{tail}" if base else tail
        result: Optional[str] = cand
        full = os.path.join(self.root, cand)
        if os.path.islink(full):
            if _hops > 40:
                result = None
            else:
                target = os.readlink(full)
                joined = target.lstrip("/") if target.startswith("/") else f"{base}/{target}"
                result = self.real(os.path.normpath(joined) if joined else "", _hops + 1)
        self._dirs[rel] = result
        return result

    def abspath(self, rel: str) -> str:
        """Host path of ``rel`` with every component resolved inside the root."""
        real = self.real(rel)
        return os.path.join(self.root, real if real is not None else rel.lstrip("/"))

    def path(self, rel: str) -> str:
        """Host path of a file: its directory resolved inside the root, the file itself not looked at
        (sysfs attributes are regular files; a file about to be created does not exist yet)."""
        head, _sep, tail = rel.strip("/").rpartition("/")
        base = self.real(head) if head else ""
        if base is None:
            return os.path.join(self.root, rel.lstrip("/"))
        return os.path.join(self.root, base, tail)

    def text(self, rel: str) -> Optional[str]:
        """The whole file as text (UTF-8, undecodable bytes as U+FFFD); None when it cannot be read."""
        data = self.read_bytes(rel)
        return None if data is None else data.decode("utf-8", "replace")

    def read(self, rel: str) -> Optional[str]:
        """A sysfs-style attribute: the file's text without surrounding blanks; None when unreadable."""
        text = self.text(rel)
        return None if text is None else text.strip()

    def read_bytes(self, rel: str) -> Optional[bytes]:
        try:
            with open(self.path(rel), "rb", buffering=0) as handle:
                return handle.read()
        except (OSError, ValueError):
            return None

    def listdir(self, rel: str) -> List[str]:
        try:
            return sorted(os.listdir(self.abspath(rel)))
        except (OSError, ValueError):
            return []

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(self.abspath(rel))

    def isfile(self, rel: str) -> bool:
        return os.path.isfile(self.abspath(rel))

    def exists(self, rel: str) -> bool:
        head, _sep, tail = rel.strip("/").rpartition("/")
        parent = self.real(head) if head else ""
        return parent is not None and os.path.lexists(os.path.join(self.root, parent, tail))

    def link_name(self, rel: str) -> Optional[str]:
        """Basename of a symlink's target (e.g. a bound driver), or None."""
        head, _sep, tail = rel.strip("/").rpartition("/")
        parent = self.real(head) if head else ""
        if parent is None:
            return None
        try:
            return os.path.basename(os.readlink(os.path.join(self.root, parent, tail)).rstrip("/"))
        except OSError:
            return None

    def write(self, rel: str, text: str) -> None:
        """Write ``text`` in one call (sysfs and configfs attributes take one write)."""
        with open(self.path(rel), "w") as handle:
            handle.write(text)

    def mkdir(self, rel: str, parents: bool = False) -> None:
        """Create a directory (configfs creates the kernel object on mkdir); nothing if it exists."""
        path = self.path(rel)
        if os.path.isdir(path):
            return
        if parents:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)


class Host:
    """A sysroot and a runner together: what an engine that reads, runs and writes needs."""

    def __init__(self, sysroot: Sysroot, runner: Runner) -> None:
        self.sysroot = sysroot
        self.runner = runner
