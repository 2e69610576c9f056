"""Helpers of the benchmarks that run on a private lab control plane (bench_node_labels.py,
bench_cluster_layer.py): start and remove it, register kwok Nodes, and count API requests.

- ``running(tmp)``: lab/kube.sh in a temporary GPUFABRIC_KUBE_DIR (beside any other cluster of
  the machine), stopped and removed on exit;
- ``register``: kwok Nodes the way the lab registers its nodes (lab/cluster/nodes.py), each from
  the hardware snapshot named for it;
- ``request_counts``: the API server's apiserver_request_total, every client together, by verb,
  resource, subresource and code;
- ``audit_mark`` / ``audited``: the requests of the collection's identity alone, from the audit
  log the lab's API server keeps of it (lab/controlplane/audit-policy.yaml);
- ``settle``: wait until the node controllers stop patching new Nodes (what they write is not a
  benchmarked run's doing).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".collections"))
sys.path.insert(0, str(REPO / "lab" / "cluster"))

import nodes as lab_nodes  # lab/cluster/nodes.py

KUBE_SH = REPO / "lab" / "kube.sh"
WRITES = ("POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION")
_SERIES = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
# Audit verbs (lower case, Kubernetes' request verbs) as apiserver_request_total names them.
_AUDIT_VERBS = {
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
}


class Cluster:
    def __init__(self, state: Path, bindir: Path):
        self.state = state
        self.bin = bindir
        self.admin = state / "admin.kubeconfig"
        self.kubeconfig = state / "kubeconfig"  # the collection's least-privilege identity
        self.audit_log = state / "logs" / "audit.log"

    def kubectl(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(self.admin), *args],
            capture_output=True,
            text=True,
            check=True,
            **kw,
        )


def kube_sh(state: Path, *args: str) -> None:
    env = dict(os.environ, GPUFABRIC_KUBE_DIR=str(state))
    subprocess.run([str(KUBE_SH), *args], env=env, check=True, capture_output=True, text=True)


def binaries() -> Path:
    """The control plane's binaries (lab/controlplane/build.sh builds them once per machine)."""
    out = subprocess.run(
        [str(REPO / "lab" / "controlplane" / "build.sh")], capture_output=True, text=True, check=True
    ).stdout
    return Path(out.strip())


@contextlib.contextmanager
def running(tmp: Path) -> Iterator[Cluster]:
    """A private lab control plane in `tmp`/kube, stopped and removed on exit."""
    cluster = Cluster(tmp / "kube", binaries())
    kube_sh(cluster.state, "start")
    try:
        yield cluster
    finally:
        kube_sh(cluster.state, "stop", "--purge")


def register(cluster: Cluster, pairs: Iterable[Tuple[str, str]], sysroots: Path, workers: int = 16) -> None:
    """kwok Nodes for (name, snapshot) pairs, as lab/cluster/nodes.py registers the lab's nodes."""
    core = lab_nodes.client(str(cluster.admin))
    lab_nodes.register(core, lab_nodes.describe(list(pairs), sysroots, "2Ti"), workers)


def request_counts(cluster: Cluster) -> Counter:
    """apiserver_request_total of every client: {(verb, resource, subresource, code): count}."""
    out = cluster.kubectl("get", "--raw", "/metrics").stdout
    counts: Counter = Counter()
    for line in out.splitlines():
        m = _SERIES.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
            key = (
                labels.get("verb", "?"),
                labels.get("resource", ""),
                labels.get("subresource", ""),
                labels.get("code", "?"),
            )
            counts[key] += int(float(m.group("value")))
    return counts


def node_patches(cluster: Cluster, by_code: bool = False):
    """PATCH requests to Nodes (not their status) the API server counted: in all, or by HTTP code."""
    codes: Counter = Counter()
    for (verb, resource, sub, code), value in request_counts(cluster).items():
        if verb == "PATCH" and resource == "nodes" and not sub:
            codes[code] += value
    return codes if by_code else sum(codes.values())


def settle(cluster: Cluster, quiet: float = 10, timeout: float = 300) -> None:
    """Wait until no PATCH of a Node has been counted for `quiet` s: the node controllers patch each
    new Node once it is Ready (its not-ready taint removed), which is not the benchmarked run's doing."""
    t0 = time.perf_counter()
    last, since = node_patches(cluster), time.perf_counter()
    while time.perf_counter() - since < quiet and time.perf_counter() - t0 < timeout:
        time.sleep(1)
        now = node_patches(cluster)
        if now != last:
            last, since = now, time.perf_counter()
    print(f"  waited {time.perf_counter() - t0:.0f} s for the node controllers' own Node patches to stop")


def audit_mark(cluster: Cluster) -> int:
    """Where the audit log ends now (audited() reads what comes after)."""
    return cluster.audit_log.stat().st_size if cluster.audit_log.exists() else 0


def audited(cluster: Cluster, mark: int) -> Counter:
    """The collection identity's requests since `mark`: {(VERB, resource, subresource, code): count}.
    The log holds that identity alone (lab/controlplane/audit-policy.yaml); a long request (a watch)
    counts once, when it completes. Fails when the log was rotated since the mark."""
    if audit_mark(cluster) < mark:
        raise RuntimeError(f"{cluster.audit_log} was rotated during the run: its requests cannot be counted")
    counts: Counter = Counter()
    with open(cluster.audit_log, "rb") as handle:
        handle.seek(mark)
        for raw in handle:
            event = json.loads(raw)
            if event.get("stage") not in ("ResponseComplete", "Panic"):
                continue
            ref = event.get("objectRef") or {}
            verb = _AUDIT_VERBS.get(event.get("verb", ""), event.get("verb", "?").upper())
            code = str((event.get("responseStatus") or {}).get("code", "?"))
            counts[(verb, ref.get("resource", event.get("requestURI", "")), ref.get("subresource", ""), code)] += 1
    return counts


def by_verb(counts: Counter) -> Counter:
    out: Counter = Counter()
    for (verb, _resource, _sub, _code), value in counts.items():
        out[verb] += value
    return out


def writes(counts: Counter) -> Counter:
    """The write requests of `counts`: {(VERB, resource[/subresource]): count}. A POST of a review
    (SelfSubjectAccessReview and the like: a question, stored nowhere) is not a write."""
    out: Counter = Counter()
    for (verb, resource, sub, _code), value in counts.items():
        if verb in WRITES and value and not resource.endswith("reviews"):
            out[(verb, f"{resource}/{sub}" if sub else resource)] += value
    return out


def show(counts: Counter) -> str:
    """'VERB n, ...' for by_verb()/writes() counters, largest first; '0' when empty."""
    items = [(" ".join(k) if isinstance(k, tuple) else k, v) for k, v in counts.items() if v]
    return ", ".join(f"{k} {v}" for k, v in sorted(items, key=lambda kv: (-kv[1], kv[0]))) or "0"
