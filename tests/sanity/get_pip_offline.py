"""Stand-in for the get-pip bootstrap script that ansible-test downloads from a host the lab
machines cannot reach: it installs pip with the pip wheel bundled in Python's ensurepip,
fetching the requested pip release from the package index as usual."""

from __future__ import annotations

import ensurepip
import glob
import os
import sys

_GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    wheels = sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")))
    if not wheels:
        sys.stderr.write("no bundled pip wheel found in ensurepip\n")
        return 1
    sys.path.insert(0, wheels[-1])
    from pip._internal.cli.main import main as pip_main

    args = [arg for arg in sys.argv[1:] if arg not in _GET_PIP_ONLY]
    return pip_main(["install", *args])


if __name__ == "__main__":
    sys.exit(main())
