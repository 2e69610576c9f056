"""Play the NVIDIA Network Operator against the lab API double: set status.state of every
NicClusterPolicy and NicNodePolicy to the state named in a mode file (ready | notReady).

Usage: play_operator.py KUBECONFIG MODE_FILE [--once]
Polls every 0.5 s; patches /status only when the state differs (so a no-op keeps resourceVersion).
Stdlib only (the double speaks plain HTTP with a dummy token).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

import yaml

KINDS = ("nicclusterpolicies", "nicnodepolicies")
BASE = "/apis/mellanox.com/v1alpha1/"


def _server(kubeconfig: str):
    with open(kubeconfig, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    return cfg["clusters"][0]["cluster"]["server"], cfg["users"][0]["user"].get("token", "")


def _call(server, token, method, path, body=None, ctype="application/json"):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        server + path, data=data, method=method, headers={"Authorization": "Bearer " + token, "Content-Type": ctype}
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read() or b"{}")


def sync(server: str, token: str, state: str) -> int:
    changed = 0
    for plural in KINDS:
        try:
            items = _call(server, token, "GET", BASE + plural).get("items") or []
        except urllib.error.HTTPError:
            continue  # CRD not registered yet
        for obj in items:
            if (obj.get("status") or {}).get("state") == state:
                continue
            status = {
                "state": state,
                "reason": "" if state == "ready" else "lab: operator held not ready",
                "appliedStates": [{"name": "state-rdma-device-plugin", "state": state}],
            }
            _call(
                server,
                token,
                "PATCH",
                BASE + plural + "/" + obj["metadata"]["name"] + "/status",
                {"status": status},
                "application/merge-patch+json",
            )
            changed += 1
    return changed


def main(argv) -> int:
    kubeconfig, mode_file = argv[1], argv[2]
    server, token = _server(kubeconfig)
    while True:
        try:
            with open(mode_file, encoding="utf-8") as fh:
                state = fh.read().strip() or "ready"
            sync(server, token, state)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            print(f"play_operator: {exc}", file=sys.stderr, flush=True)
        if "--once" in argv:
            return 0
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
