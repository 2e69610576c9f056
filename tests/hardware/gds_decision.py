#!/usr/bin/env python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the gpudirect_facts gathering and the DMA-BUF/peermem decision on this host (read-only).

Uses the modules' own gather() (discover/gpudirect_read.py) with a subprocess runner in place of
AnsibleModule, so it runs where only Python and the collection are present. Prints the facts as JSON.
Usage: gds_decision.py [SYSROOT] [METHOD]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot


class SubprocessRunner:
    def which(self, name):
        return shutil.which(name)

    def run(self, argv):
        env = dict(os.environ, LC_ALL="C")
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def main() -> int:
    params = {
        "sysroot": sys.argv[1] if len(sys.argv) > 1 else "/",
        "method": sys.argv[2] if len(sys.argv) > 2 else "auto",
        "gpus": [],
        "cuda_version": "",
        "mofed": None,
    }
    print(json.dumps(gpudirect_read.gather(params, SubprocessRunner(), Sysroot("/")), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
