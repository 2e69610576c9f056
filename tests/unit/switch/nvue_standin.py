"""The lab's NVUE stand-in (lab/nvue/standin.py) for the switch tests: imported from the checkout,
started on a free loopback port with a state directory of its own."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, Dict, Optional

REPO = Path(__file__).resolve().parents[3]

USER, PASSWORD = "cumulus", "stand-in-password"


def load():
    spec = importlib.util.spec_from_file_location("nvue_standin", REPO / "lab" / "nvue" / "standin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Standin:
    """A running stand-in: its address, CA file and applied tree (read and written as a file)."""

    def __init__(self, state_dir: Path, applied: Optional[Dict[str, Any]] = None):
        self.dir = state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        if applied is not None:
            (state_dir / "applied.json").write_text(json.dumps(applied))
        self.server = load().serve(str(state_dir), USER, PASSWORD)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.ca = str(state_dir / "ca.pem")

    def applied(self) -> Dict[str, Any]:
        return json.loads((self.dir / "applied.json").read_text())

    def set_applied(self, tree: Dict[str, Any]) -> None:
        (self.dir / "applied.json").write_text(json.dumps(tree))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
