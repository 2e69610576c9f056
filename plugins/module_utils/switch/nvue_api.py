# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP to one switch's NVUE REST API through ansible.module_utils.urls: HTTPS, basic
authentication, TLS verified by default (against ``ca_path`` when given, else the system's CAs).
The flow and what changes are switch.nvue's. NVUE listens on port 8765 unless the switch's
configuration says otherwise (Cumulus Linux user guide, "NVUE API")."""

from __future__ import annotations

import json
from typing import Any, Optional, Tuple
from urllib.error import HTTPError, URLError
from urllib.parse import quote

from ansible.module_utils.urls import Request

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import nvue as _nvue

DEFAULT_PORT = 8765
BASE = "/nvue_v1/"
# The connection options of every NVUE module (doc fragment gpufabric.rollout.nvue_api).
ARGUMENT_SPEC = {
    "switch": {"type": "str", "required": True},
    "address": {"type": "str", "required": True},
    "user": {"type": "str", "required": True},
    "password": {"type": "str", "required": True, "no_log": True},
    "ca_path": {"type": "path"},
    "validate_certs": {"type": "bool", "default": True},
    "timeout": {"type": "int", "default": 30},
}


def host_port(address: str) -> Tuple[str, int]:
    """(host, port) of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    text = address.strip()
    if text.startswith("["):
        host, _sep, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        host = f"[{host}]"
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, ""  # a name, an IPv4 address or a bare IPv6 address
        if ":" in host:
            host = f"[{host}]"
    if not host or (port and not port.isdigit()) or (port and not 0 < int(port) < 65536):
        raise ValueError(f"{address!r} is not HOST or HOST:PORT")
    return host, int(port) if port else DEFAULT_PORT


class NvueApi:
    """``request(method, path, body, rev)`` -> the parsed JSON answer, NvueError on any failure."""

    def __init__(
        self,
        switch: str,
        address: str,
        user: str,
        password: str,
        ca_path: Optional[str] = None,
        validate_certs: bool = True,
        timeout: int = 30,
    ):
        self.switch = switch
        host, port = host_port(address)
        self.base = f"https://{host}:{port}{BASE}"
        self.http = Request(
            url_username=user,
            url_password=password,
            force_basic_auth=True,
            validate_certs=validate_certs,
            ca_path=ca_path,
            timeout=timeout,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            follow_redirects="none",
            use_netrc=False,  # the credentials are the ones given, never a ~/.netrc entry
        )

    def url(self, path: str, rev: Optional[str] = None) -> str:
        # A revision ID is changeset/USER/TIME: its slashes are encoded, in the path and in ?rev=.
        parts = path.split("/", 1)
        if parts[0] == "revision" and len(parts) == 2:
            path = "revision/" + quote(parts[1], safe="")
        return self.base + path + (f"?rev={quote(rev, safe='')}" if rev else "")

    def request(self, method: str, path: str, body: Any = None, rev: Optional[str] = None) -> Any:
        url = self.url(path, rev)
        data = None if body is None else json.dumps(body)
        try:
            answer = self.http.open(method, url, data=data).read()
        except HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace") if exc.fp else str(exc.reason)
            raise _nvue.api_error(self.switch, method, url, exc.code, detail) from None
        except (URLError, OSError, ValueError) as exc:
            raise _nvue.api_error(self.switch, method, url, None, str(getattr(exc, "reason", exc))) from None
        try:
            return json.loads(answer or b"null")
        except ValueError:
            raise _nvue.api_error(self.switch, method, url, 200, "the answer is not JSON") from None


def from_params(params: Any) -> NvueApi:
    """The API of a module's connection options (ARGUMENT_SPEC)."""
    return NvueApi(
        params["switch"],
        params["address"],
        params["user"],
        params["password"],
        params["ca_path"],
        params["validate_certs"],
        params["timeout"],
    )
