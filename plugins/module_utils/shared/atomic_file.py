# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write and read files the way a root process must in a directory others may write to.

``write_atomic`` puts the new content in a temporary file that ``tempfile.mkstemp`` creates in
the target's directory (O_CREAT | O_EXCL: it never opens an existing name, so never a symlink
someone planted at a name they could predict), then renames it over the target (``os.replace``:
atomic on one filesystem; a symlink at the target is replaced, not followed). ``read_bytes``
opens with O_NOFOLLOW, so a symlink at the target is not read through either.

Pure standard library (modules run on nodes with Python >= 3.8).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from typing import Optional, Tuple


def temporary_beside(path: str) -> Tuple[int, str]:
    """A new file (descriptor, name) in the directory of ``path``, mode 0600, a name nobody chose."""
    directory = os.path.dirname(os.path.abspath(path))
    return tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)


def default_mode() -> int:
    """The mode a new file gets from open(): 0666 less the process's umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str, data: bytes, mode: Optional[int] = None) -> None:
    """Replace ``path`` with ``data``: written to a ``mkstemp`` file beside it, then ``os.replace``.

    ``mode``: the file's permissions; None keeps those of the regular file there now, or gives a
    new file the umask's default (as open() would have)."""
    if mode is None:
        try:
            st = os.lstat(path)
            mode = st.st_mode & 0o7777 if not os.path.islink(path) else default_mode()
        except FileNotFoundError:
            mode = default_mode()
    fd, temporary = temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_bytes(path: str) -> Optional[bytes]:
    """The content of the regular file at ``path``, read without following a symlink there (O_NOFOLLOW).
    None when there is no file or a symlink: to a writer both mean "write it", and write_atomic then
    replaces the link with a regular file instead of writing where it points."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read()
