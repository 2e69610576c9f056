"""A signed Helm chart repository served on 127.0.0.1 for the tests of the verified-chart paths: the lab's
stand-in charts packaged and signed with a key made for the test (lab/charts/signed_repo.py: gpg, then
helm package --sign), an index, and an attacker's keyring that does not verify them."""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List

REPO = Path(__file__).resolve().parents[1]
HELM = REPO / ".tools" / "bin" / "helm"
KUBECTL = REPO / ".tools" / "bin" / "kubectl"


def _signed_repo_module():
    spec = importlib.util.spec_from_file_location("signed_repo", REPO / "lab" / "charts" / "signed_repo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def signed_repository(base: Path, charts: List[Path]) -> Iterator[Dict[str, Any]]:
    """Serve `charts` signed: {url, served (the directory served), keyring (verifies them), attacker (a keyring
    that does not)}. Fails when helm or gpg is missing."""
    for tool in (HELM, Path(shutil.which("gpg") or "/nonexistent")):
        if not tool.exists():
            raise RuntimeError(f"{tool.name} is missing: `make tools` installs it")
    signed_repo = _signed_repo_module()
    (base / "vendor").mkdir(parents=True)
    served = signed_repo.build(base / "vendor", [str(c) for c in charts])
    attacker = base / "attacker"
    attacker.mkdir(mode=0o700)
    signed_repo.gpg(attacker, "--quick-generate-key", "attacker <a@example.invalid>", "rsa2048", "sign", "1d")
    signed_repo.gpg(attacker, "--export", "-o", str(attacker / "pubring.gpg"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(served)))
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    subprocess.run([str(HELM), "repo", "index", str(served), "--url", url], check=True, capture_output=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield {
            "url": url,
            "served": served,
            "keyring": base / "vendor" / "pubring.gpg",
            "attacker": attacker / "pubring.gpg",
        }
    finally:
        httpd.shutdown()
        httpd.server_close()


def kustomize_build(folder: Path, home: Path) -> subprocess.CompletedProcess:
    """`kubectl kustomize --enable-helm` of `folder` (kustomize's HelmChartInflationGenerator runs helm), Helm's
    homes under `home`."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "HELM_CACHE_HOME": str(home / "cache")}
    env["HELM_CONFIG_HOME"] = str(home / "config")
    return subprocess.run(
        [str(KUBECTL), "kustomize", "--enable-helm", "--helm-command", str(HELM), str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
