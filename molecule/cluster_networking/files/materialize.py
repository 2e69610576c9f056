"""Materialise lab hardware snapshots (lab/snapshots/build.py) as sysroots: materialize.py REPO DEST NAME..."""

from __future__ import annotations

import importlib.util
import os
import sys


def main(argv) -> int:
    repo, dest, names = argv[1], argv[2], argv[3:]
    spec = importlib.util.spec_from_file_location(
        "gpufabric_snapshots_build", os.path.join(repo, "lab", "snapshots", "build.py")
    )
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for name in names:
        target = os.path.join(dest, name)
        if not os.path.isdir(os.path.join(target, "sys")):
            os.makedirs(target, exist_ok=True)
            build.materialize(name, target)
            print("materialised", name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
