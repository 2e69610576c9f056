#!/usr/bin/env python
"""A signed Helm chart repository for the lab: the lab's stand-in charts packaged and signed with a
throwaway key (helm package --sign, provenance files beside the archives), an index, and an HTTP
server on 127.0.0.1 that serves them, so the roles' verified-chart path (`*_chart_keyring`: helm pull
--verify, then install from the verified archive) runs against a real repository.

    signed_repo.py start DIR CHART...   build DIR/served, serve it in the background; write DIR/url
                                        (the repository URL), DIR/pubring.gpg (the keyring that verifies
                                        it) and DIR/server.pid
    signed_repo.py stop DIR             stop the server

Needs gpg and helm (HELM, default .tools/bin/helm of this checkout). The key is RSA: helm's OpenPGP
library signs and verifies RSA keys.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HELM = os.environ.get("HELM", str(REPO / ".tools" / "bin" / "helm"))
KEY_NAME = "gpufabric lab chart signer"


def gpg(home: Path, *argv: str) -> None:
    batch = ["--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run(["gpg", "--homedir", str(home), *batch, *argv], check=True, capture_output=True)


def build(base: Path, charts: list) -> Path:
    home = base / "gnupg"
    home.mkdir(mode=0o700)
    gpg(home, "--quick-generate-key", f"{KEY_NAME} <charts@gpufabric.invalid>", "rsa2048", "sign", "2d")
    gpg(home, "--export-secret-keys", "-o", str(base / "secring.gpg"))
    gpg(home, "--export", "-o", str(base / "pubring.gpg"))
    served = base / "served"
    served.mkdir()
    for chart in charts:
        subprocess.run(
            [
                HELM,
                "package",
                "--sign",
                "--key",
                KEY_NAME,
                "--keyring",
                str(base / "secring.gpg"),
                chart,
                "-d",
                str(served),
            ],
            check=True,
            capture_output=True,
        )
    (base / "secring.gpg").unlink()  # only the public half stays
    shutil.rmtree(home)
    return served


def start(base: Path, charts: list) -> int:
    stop(base)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    served = build(base, charts)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    subprocess.run([HELM, "repo", "index", str(served), "--url", url], check=True, capture_output=True)
    pid = os.fork()
    if pid:
        server.server_close()
        (base / "server.pid").write_text(f"{pid}\n")
        (base / "url").write_text(url + "\n")
        print(url)
        return 0
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    try:
        server.serve_forever()
    finally:
        os._exit(0)


def stop(base: Path) -> int:
    pidfile = base / "server.pid"
    if pidfile.is_file():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
        pidfile.unlink()
    return 0


def main(argv: list) -> int:
    if len(argv) >= 3 and argv[1] == "start":
        return start(Path(argv[2]).resolve(), argv[3:])
    if len(argv) == 3 and argv[1] == "stop":
        return stop(Path(argv[2]).resolve())
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
