# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's topology read as the modules do it: where the ``nvidia-smi topo -m`` matrix comes
from (the snapshot's file, the tool, or neither), its check, and ``discover``. The modules
``topology_facts`` and ``plan_facts`` call ``read``; TopologyError or ParseError when it cannot.

Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import discover, validate_sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import parse_topo_matrix
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

SNAPSHOT_MATRIX = "nvidia-smi-topo-m.txt"


def topo_text(params: Mapping[str, Any], sr: Sysroot, runner: Runner) -> Tuple[Optional[str], str, Optional[str]]:
    """(matrix text or None, source, where it came from) following the nvidia_smi option."""
    mode = params["nvidia_smi"]
    if mode in ("auto", "file") and sr.isfile(SNAPSHOT_MATRIX):
        return sr.text(SNAPSHOT_MATRIX), "file", sr.path(SNAPSHOT_MATRIX)
    if mode == "command" or (mode == "auto" and os.path.realpath(sr.root) == "/"):
        binary = runner.which("nvidia-smi")
        if binary:
            rc, out, _err = runner.run([binary, "topo", "-m"])
            if rc == 0 and out:
                return out, "command", "nvidia-smi topo -m"
    return None, "none", None


def read(params: Mapping[str, Any], runner: Runner) -> Tuple[Dict[str, Any], str]:
    """(the gpufabric_topology facts, where the nvidia-smi matrix came from: file, command or none)."""
    validate_sysroot(params["sysroot"])
    sr = Sysroot(params["sysroot"])
    text, source, origin = topo_text(params, sr, runner)
    if text is not None:
        try:
            parse_topo_matrix(text)
        except ParseError as exc:
            raise exc.within(f"{origin} (GPU/NIC matrix of this host)") from None
    return discover(params["sysroot"], text, params["storage_nics"], params["rail_nics"]), source
