"""Play the NVIDIA Network Operator and GPU Operator against the lab API: set status.state of every
NicClusterPolicy, NicNodePolicy, ClusterPolicy and NVIDIADriver to the state named in a mode file
(ready | notReady), with the conditions the real operators write beside it.

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

# ClusterPolicy operand states in the GPU Operator's order (NVIDIA/gpu-operator controllers/
# state_manager.go) and the spec section that enables each; "not ready" names the enabled ones.
GPU_STATES = (
    ("state-driver", "driver"),
    ("state-container-toolkit", "toolkit"),
    ("state-operator-validation", None),
    ("state-device-plugin", "devicePlugin"),
    ("state-dcgm-exporter", "dcgmExporter"),
    ("gpu-feature-discovery", "gfd"),
    ("state-mig-manager", "migManager"),
)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def network_status(obj, state):
    return {
        "state": state,
        "reason": "" if state == "ready" else "lab: operator held not ready",
        "appliedStates": [{"name": "state-rdma-device-plugin", "state": state}],
    }


def cluster_policy_status(obj, state):
    """As the GPU Operator writes it (internal/conditions/clusterpolicy.go): Ready and Error conditions;
    not ready names the operand states, "ClusterPolicy is not ready; states not ready: [...]"."""
    spec = obj.get("spec") or {}
    if state == "ready":
        ready = {"type": "Ready", "status": "True", "reason": "Reconciled", "message": "ClusterPolicy is ready"}
        error = {"type": "Error", "status": "False", "reason": "Ready", "message": ""}
    else:
        names = [n for n, key in GPU_STATES if key is None or (spec.get(key) or {}).get("enabled", True)]
        ready = {"type": "Ready", "status": "False", "reason": "Error", "message": ""}
        error = {
            "type": "Error",
            "status": "True",
            "reason": "OperandNotReady",
            "message": "ClusterPolicy is not ready; states not ready: [{}]".format(" ".join(names)),
        }
    for cond in (ready, error):
        cond["lastTransitionTime"] = _now()
    return {"state": state, "namespace": "gpu-operator", "conditions": [ready, error]}


def nvidia_driver_status(obj, state):
    return {
        "state": state,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if state == "ready" else "False",
                "reason": "Reconciled" if state == "ready" else "DriverNotReady",
                "message": "" if state == "ready" else "lab: driver pods held not ready",
                "lastTransitionTime": _now(),
            }
        ],
    }


# (API path of the kind, status writer)
KINDS = (
    ("/apis/mellanox.com/v1alpha1/nicclusterpolicies", network_status),
    ("/apis/mellanox.com/v1alpha1/nicnodepolicies", network_status),
    ("/apis/nvidia.com/v1/clusterpolicies", cluster_policy_status),
    ("/apis/nvidia.com/v1alpha1/nvidiadrivers", nvidia_driver_status),
)


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
    for path, status_of in KINDS:
        try:
            items = _call(server, token, "GET", path).get("items") or []
        except urllib.error.HTTPError:
            continue  # CRD not registered yet
        for obj in items:
            if (obj.get("status") or {}).get("state") == state:
                continue
            _call(
                server,
                token,
                "PATCH",
                path + "/" + obj["metadata"]["name"] + "/status",
                {"status": status_of(obj, state)},
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
