#!/usr/bin/env python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A lab STAND-IN for the NVUE REST API of a Cumulus Linux switch: not NVIDIA's software, no switch
behind it. It exists so that the collection's NVUE apply path (gpufabric.rollout.nvue_config) and
the agreement check (gpufabric.rollout.nvue_running) run against an HTTPS API with the documented
revision flow, on loopback, without a switch.

What it follows, from NVIDIA's Cumulus Linux user guide, "NVUE API"
(https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/System-Configuration/NVIDIA-User-Experience-NVUE/NVUE-API/):

- HTTPS with basic authentication (401 without valid credentials), under ``/nvue_v1/``;
- ``POST /nvue_v1/revision`` creates a revision and answers ``{ID: {"state": "pending", ...}}``;
  IDs have the shape ``changeset/USER/TIMESTAMP`` and are URL-encoded in later requests;
- ``PATCH /nvue_v1/?rev=ID`` merges a JSON object into the revision's configuration tree;
- ``GET /nvue_v1/?rev=applied`` and ``?rev=ID`` return the applied tree and the revision's tree
  (a path below ``/nvue_v1/`` returns that part of it, 404 when it is not configured);
- ``PATCH /nvue_v1/revision/ID`` with ``{"state": "apply", "auto-prompt": {"ays": "ays_yes"}}``
  applies the revision; ``GET /nvue_v1/revision/ID`` reports its state (``apply`` while it is being
  applied, then ``applied``, or ``apply_fail`` with the issue).

What it does not do: no schema (any key is accepted) except one check that makes a failed apply
testable (an interface ``link mtu`` outside Cumulus Linux's 552-9216 fails the apply), no
operational state, no ``nv show`` defaults in the tree (GET returns only what was set), no
``ays`` prompts other than ``ays_yes``, no ``rev=startup``/``operational``.

The applied tree is kept in ``STATE_DIR/applied.json`` and read again on every request, so a test
can seed it before the start and edit it while the stand-in runs (to inject a mismatch). TLS: at
start it makes a private CA and a server certificate for 127.0.0.1 with ``openssl`` in STATE_DIR;
clients verify against ``STATE_DIR/ca.pem``. The password comes from an environment variable, never
from the command line.

    NVUE_STANDIN_PASSWORD=secret python3 lab/nvue/standin.py --state-dir DIR --user cumulus [--port 0]

prints ``listening on https://127.0.0.1:PORT`` and writes the port to ``DIR/port``.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hmac
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any, Dict, Optional, Tuple

API = "/nvue_v1"
MTU_RANGE = (552, 9216)  # Cumulus Linux's interface MTU range ("Interface Configuration and Management")
FAILED = "apply_fail"


def merge(tree: Dict[str, Any], patch: Any) -> Dict[str, Any]:
    """``patch`` merged into a copy of ``tree``: objects key by key, anything else replaces, null unsets."""
    out = copy.deepcopy(tree)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def invalid(tree: Dict[str, Any]) -> Optional[str]:
    """Why an apply of ``tree`` fails, or None."""
    for name, interface in (tree.get("interface") or {}).items():
        mtu = ((interface or {}).get("link") or {}).get("mtu") if isinstance(interface, dict) else None
        if mtu is not None and not (isinstance(mtu, int) and MTU_RANGE[0] <= mtu <= MTU_RANGE[1]):
            return f"interface {name} link mtu {mtu}: outside {MTU_RANGE[0]}-{MTU_RANGE[1]}"
    return None


class State:
    """The applied tree (a file) and the revisions of this run (memory)."""

    def __init__(self, state_dir: str, user: str):
        self.dir = state_dir
        self.user = user
        self.lock = threading.Lock()
        self.revisions: Dict[str, Dict[str, Any]] = {}
        self.counter = 0
        if not os.path.exists(self.applied_path):
            self.write_applied({})

    @property
    def applied_path(self) -> str:
        return os.path.join(self.dir, "applied.json")

    def applied(self) -> Dict[str, Any]:
        with open(self.applied_path, encoding="utf-8") as handle:
            return json.load(handle)

    def write_applied(self, tree: Dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".applied-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(tree, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.applied_path)

    def create(self) -> Tuple[str, Dict[str, Any]]:
        self.counter += 1
        stamp = time.strftime("%Y-%m-%d_%H.%M.%S", time.gmtime())
        rev = f"changeset/{self.user}/{stamp}_{self.counter:04d}"
        self.revisions[rev] = {"state": "pending", "patches": [], "issue": {}, "polls": 0}
        return rev, self.status(rev)

    def tree(self, rev: str) -> Dict[str, Any]:
        """A revision's tree: the applied tree with its patches (a changeset on top of what runs)."""
        tree = self.applied()
        for patch in self.revisions[rev]["patches"]:
            tree = merge(tree, patch)
        return tree

    def status(self, rev: str) -> Dict[str, Any]:
        entry = self.revisions[rev]
        return {"state": entry["state"], "transition": {"issue": entry["issue"], "progress": ""}}

    def apply(self, rev: str) -> None:
        entry = self.revisions[rev]
        tree = self.tree(rev)
        reason = invalid(tree)
        if reason:
            entry["state"], entry["issue"] = FAILED, {"0": {"message": reason, "severity": "error"}}
            return
        self.write_applied(tree)
        entry["state"] = "apply"  # reported once while "applying", then applied (the client polls)

    def poll(self, rev: str) -> Dict[str, Any]:
        entry = self.revisions[rev]
        out = self.status(rev)
        if entry["state"] == "apply":
            entry["state"] = "applied"
        return out


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "nvue-standin"
    state: State
    password: str

    def log_message(self, *args: Any) -> None:
        if os.environ.get("NVUE_STANDIN_LOG"):
            super().log_message(*args)

    def _send(self, code: int, body: Any, headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(body, indent=1).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, title: str, detail: str = "") -> None:
        headers = {"WWW-Authenticate": 'Basic realm="nvue"'} if code == 401 else None
        self._send(code, {"status": code, "title": title, "detail": detail}, headers)

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization") or ""
        if not given.startswith("Basic "):
            return False
        try:
            user, _sep, password = base64.b64decode(given[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return hmac.compare_digest(user, self.state.user) and hmac.compare_digest(password, self.password)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"null")

    def _route(self) -> Tuple[str, Dict[str, str]]:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        return urllib.parse.unquote(url.path), query

    def _handle(self, method: str) -> None:
        if not self._authorized():
            self._error(401, "Unauthorized", "basic authentication with the stand-in's user and password")
            return
        path, query = self._route()
        if path != API and not path.startswith(API + "/"):
            self._error(404, "Not Found", path)
            return
        rest = path[len(API) :].strip("/")
        with self.state.lock:
            try:
                if rest == "revision" or rest.startswith("revision/"):
                    self._revision(method, rest[len("revision") :].strip("/"))
                else:
                    self._config(method, rest, query.get("rev"))
            except ValueError as exc:
                self._error(400, "Bad Request", str(exc))

    def _revision(self, method: str, rev: str) -> None:
        if method == "POST" and not rev:
            rev, status = self.state.create()
            self._send(200, {rev: status})
        elif method == "GET" and not rev:
            self._send(200, {r: self.state.status(r) for r in self.state.revisions})
        elif rev not in self.state.revisions:
            self._error(404, "Not Found", f"no revision {rev}")
        elif method == "GET":
            self._send(200, self.state.poll(rev))
        elif method == "PATCH":
            body = self._body()
            if not isinstance(body, dict) or body.get("state") != "apply":
                raise ValueError('a revision is applied with {"state": "apply", ...}')
            if (body.get("auto-prompt") or {}).get("ays") != "ays_yes":
                raise ValueError('the stand-in answers no prompts: give "auto-prompt": {"ays": "ays_yes"}')
            if self.state.revisions[rev]["state"] != "pending":
                raise ValueError(f"revision {rev} is {self.state.revisions[rev]['state']}, not pending")
            self.state.apply(rev)
            self._send(200, self.state.status(rev))
        else:
            self._error(405, "Method Not Allowed", method)

    def _config(self, method: str, rest: str, rev: Optional[str]) -> None:
        if rev is None:
            raise ValueError("give ?rev=applied or ?rev=ID")
        if rev != "applied" and rev not in self.state.revisions:
            self._error(404, "Not Found", f"no revision {rev}")
            return
        if method == "GET":
            node: Any = self.state.applied() if rev == "applied" else self.state.tree(rev)
            for part in [p for p in rest.split("/") if p]:
                if not isinstance(node, dict) or part not in node:
                    self._error(404, "Not Found", f"{rest} is not configured in {rev}")
                    return
                node = node[part]
            self._send(200, node)
        elif method == "PATCH" and rev != "applied":
            if self.state.revisions[rev]["state"] != "pending":
                raise ValueError(f"revision {rev} is {self.state.revisions[rev]['state']}, not pending")
            body = self._body()
            for part in reversed([p for p in rest.split("/") if p]):
                body = {part: body}
            if not isinstance(body, dict):
                raise ValueError("a PATCH body is a JSON object")
            self.state.revisions[rev]["patches"].append(body)
            self._send(200, self.state.tree(rev))
        else:
            self._error(405, "Method Not Allowed", f"{method} on rev={rev}")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


def make_certificates(state_dir: str, host: str = "127.0.0.1") -> Tuple[str, str, str]:
    """(ca.pem, server.pem, server.key) in ``state_dir``: a private CA and a server certificate for
    ``host`` (subjectAltName IP), made with the openssl command; kept if they exist."""
    ca, cert, key = (os.path.join(state_dir, n) for n in ("ca.pem", "server.pem", "server.key"))
    if all(os.path.exists(p) for p in (ca, cert, key)):
        return ca, cert, key
    ca_key = os.path.join(state_dir, "ca.key")
    csr = os.path.join(state_dir, "server.csr")
    ext = os.path.join(state_dir, "server.ext")
    with open(ext, "w", encoding="utf-8") as handle:
        handle.write(
            f"subjectAltName=IP:{host}\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        )
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}
    ec_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]  # P-256: made in milliseconds
    subprocess.run(
        ["openssl", "req", "-x509", *ec_key, "-days", "2", "-subj",
         "/CN=nvue-standin test CA", "-keyout", ca_key, "-out", ca,
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        check=True,
        **quiet,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "req", "-new", *ec_key, "-subj", f"/CN={host}", "-keyout", key, "-out", csr],
        check=True,
        **quiet,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-days", "2", "-extfile", ext, "-out", cert],
        check=True,
        **quiet,
    )  # fmt: skip
    os.chmod(key, 0o600)
    os.chmod(ca_key, 0o600)
    return ca, cert, key


def serve(state_dir: str, user: str, password: str, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A started stand-in (serving in a daemon thread) on 127.0.0.1:``port`` (0: a free one)."""
    os.makedirs(state_dir, exist_ok=True)
    _ca, cert, key = make_certificates(state_dir)
    handler = type("StandinHandler", (Handler,), {"state": State(state_dir, user), "password": password})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(os.path.join(state_dir, "port"), "w", encoding="utf-8") as handle:
        handle.write(str(server.server_address[1]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description="Lab stand-in of the NVUE REST API (not NVIDIA's software).")
    parser.add_argument("--state-dir", required=True, help="applied.json, the certificates and the port file")
    parser.add_argument("--user", default="cumulus")
    parser.add_argument("--password-env", default="NVUE_STANDIN_PASSWORD", help="variable holding the password")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    password = os.environ.get(args.password_env)
    if not password:
        parser.error(f"set the password in the environment variable {args.password_env}")
    server = serve(args.state_dir, args.user, password, args.port)
    print(f"listening on https://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
