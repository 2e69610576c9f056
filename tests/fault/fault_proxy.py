"""A faulty API server for the fault suite: a TLS proxy on loopback in front of a private lab
control plane's kube-apiserver. It serves with a certificate of its own (the kubeconfig it writes
trusts that CA and carries no credentials) and forwards each request with the admin's client
certificate from the cluster's admin kubeconfig. On the way it can:

- answer a deterministic, seeded share of requests itself with 429 (Retry-After: 1), 500 or 409
  (409 only to writes: a read conflicts with nothing), each a Kubernetes Status body;
- answer 503 to every request that `refuse` selects (an object the API server keeps failing);
- hold every request `delay` seconds before forwarding it (a slow server: a run that lasts), and
  call `after_writes[1]` (in a thread of its own) once `after_writes[0]` writes went through;
- answer 503 when the API server behind it is down (a load balancer without a healthy backend).

It counts what it answered itself (`injected`, by status code) and what it forwarded.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.client
import http.server
import ipaddress
import json
import random
import ssl
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Tuple

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

WRITES = frozenset(("POST", "PUT", "PATCH", "DELETE"))
# The Status bodies kube-apiserver answers: only a conflict names the object in its message.
REASONS = {
    409: (
        "Conflict",
        "Operation cannot be fulfilled on {what}: the object has been modified; please apply your "
        "changes to the latest version and try again",
    ),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: etcdserver: request timed out"),
    503: ("ServiceUnavailable", "etcdserver: leader changed"),
}
# Hop-by-hop headers, and the ones the proxy sets itself.
_DROPPED = frozenset(("host", "connection", "keep-alive", "transfer-encoding", "content-length", "authorization"))


def _pem(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def make_tls(workdir: Path) -> Dict[str, Path]:
    """A CA of the test's own and a serving certificate for 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufabric fault proxy CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fault-proxy")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    raw = serialization.PrivateFormat.PKCS8
    return {
        "ca": _pem(workdir / "proxy-ca.crt", ca.public_bytes(pem)),
        "cert": _pem(workdir / "proxy.crt", cert.public_bytes(pem)),
        "key": _pem(workdir / "proxy.key", key.private_bytes(pem, raw, serialization.NoEncryption())),
    }


def upstream_of(admin_kubeconfig: Path, workdir: Path):
    """(host, port, client SSL context) of the API server an admin kubeconfig names."""
    cfg = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    user = cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    cert = _pem(workdir / "upstream-client.crt", base64.b64decode(user["client-certificate-data"]))
    key = _pem(workdir / "upstream-client.key", base64.b64decode(user["client-key-data"]))
    ctx.load_cert_chain(str(cert), str(key))
    hostport = cluster["server"].split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    return host, int(port), ctx


def _object_of(path: str) -> str:
    """'configmaps "name"' for an object's path (/api/v1/namespaces/NS/configmaps/NAME), else the path."""
    parts = path.split("?")[0].strip("/").split("/")
    if len(parts) >= 2 and parts[-2] not in ("namespaces", "api", "apis"):
        return f'{parts[-2]} "{parts[-1]}"'
    return "/" + "/".join(parts)


def status_body(code: int, path: str) -> bytes:
    reason, message = REASONS[code]
    what = _object_of(path)
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message.format(what=what),
        "reason": reason,
        "code": code,
    }
    if code == 429:
        body["details"] = {"retryAfterSeconds": 1}
    return json.dumps(body).encode()


class FaultProxy:
    """The proxy; `with FaultProxy(...) as proxy:` serves on proxy.kubeconfig until the block ends."""

    def __init__(
        self,
        admin_kubeconfig: Path,
        workdir: Path,
        share: float = 0.0,
        codes: Sequence[int] = (429, 500, 409),
        seed: int = 36,
        refuse: Optional[Callable[[str, str], bool]] = None,
        delay: float = 0.0,
        after_writes: Optional[Tuple[int, Callable[[], None]]] = None,
    ):
        workdir.mkdir(parents=True, exist_ok=True)
        self.tls = make_tls(workdir)
        self._admin = admin_kubeconfig
        self._workdir = workdir
        self.upstream = upstream_of(admin_kubeconfig, workdir)
        self.after_writes = after_writes
        self.writes = 0
        self.share = share
        self.codes = list(codes)
        self.refuse = refuse
        self.delay = delay
        self.injected: Counter = Counter()
        self.refused: list = []  # (method, path) of each request `refuse` selected
        self.forwarded = 0
        self.upstream_down = 0
        self.enabled = True
        self._rng = random.Random(seed)
        self._turn = 0
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.tls["cert"]), str(self.tls["key"]))
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.kubeconfig = workdir / "proxy.kubeconfig"
        self._write_kubeconfig()
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    def _write_kubeconfig(self) -> None:
        ca = base64.b64encode(self.tls["ca"].read_bytes()).decode()
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "fault-proxy",
                    "cluster": {"server": f"https://127.0.0.1:{self.port}", "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": "through-proxy", "user": {}}],
            "contexts": [{"name": "fault-proxy", "context": {"cluster": "fault-proxy", "user": "through-proxy"}}],
            "current-context": "fault-proxy",
        }
        self.kubeconfig.write_text(yaml.safe_dump(cfg))
        self.kubeconfig.chmod(0o600)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def decide(self, method: str, path: str) -> Optional[int]:
        """The status the proxy answers itself, or None to forward. Deterministic for a seed and a
        sequence of requests: one draw of the seeded generator per request."""
        with self._lock:
            if not self.enabled:
                return None
            if self.refuse is not None and self.refuse(method, path):
                self.refused.append((method, path))
                self.injected[503] += 1
                return 503
            if self.share <= 0 or self._rng.random() >= self.share:
                return None
            allowed = [c for c in self.codes if c != 409 or method in WRITES] or [429]
            code = allowed[self._turn % len(allowed)]
            self._turn += 1
            self.injected[code] += 1
            return code

    def _forward(self, method: str, path: str, headers: Dict[str, str], body: bytes):
        host, port, ctx = self.upstream
        conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=60)
        try:
            conn.request(method, path, body=body if body else None, headers=headers)
            resp = conn.getresponse()
            answer = resp.status, resp.reason, resp.getheaders(), resp.read()
        except OSError:
            # A restarted control plane may listen on another port: its admin kubeconfig says where.
            with contextlib.suppress(OSError, KeyError, ValueError, ssl.SSLError):
                self.upstream = upstream_of(self._admin, self._workdir)
            raise
        finally:
            conn.close()
        if method in WRITES:
            with self._lock:
                self.writes += 1
                fire = self.after_writes is not None and self.writes == self.after_writes[0]
            if fire:
                threading.Thread(target=self.after_writes[1], name="fault-proxy-trigger", daemon=True).start()
        return answer

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet: pytest shows the counts
                pass

            def _reply(self, code: int, reason: str, headers, body: bytes) -> None:
                self.send_response(code, reason)
                for name, value in headers:
                    if name.lower() not in _DROPPED:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                method, path = self.command, self.path
                if proxy.delay:
                    time.sleep(proxy.delay)
                code = proxy.decide(method, path)
                if code is not None:
                    headers = [("Content-Type", "application/json")]
                    if code == 429:
                        headers.append(("Retry-After", "1"))
                    reason = http.HTTPStatus(code).phrase
                    self._reply(code, reason, headers, status_body(code, path))
                    return
                fwd = {k: v for k, v in self.headers.items() if k.lower() not in _DROPPED}
                try:
                    status, reason, headers, data = proxy._forward(method, path, fwd, body)
                except OSError:
                    with proxy._lock:
                        proxy.upstream_down += 1
                    self._reply(
                        503, "Service Unavailable", [("Content-Type", "application/json")], status_body(503, path)
                    )
                    return
                with proxy._lock:
                    proxy.forwarded += 1
                self._reply(status, reason, headers, data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

        return Handler
