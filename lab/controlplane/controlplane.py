"""Start, stop and report the lab's Kubernetes control plane on 127.0.0.1.

    controlplane.py start  --bin DIR --state DIR    start what is not running; print timings
    controlplane.py stop   --state DIR [--purge]     stop every component (and forget the cluster)
    controlplane.py status --state DIR               exit 0 running and ready, 3 otherwise

Components, each its own process with its log in <state>/logs/ and its pid in <state>/run/:
etcd (TLS, client certificates), kube-apiserver (TLS, client-certificate authentication,
--authorization-mode=Node,RBAC, service-account token signing, audit log of the collection's
identity), kube-controller-manager (per-controller service-account credentials),
kube-scheduler, kwok (the kubelets of simulated nodes annotated kwok.x-k8s.io/node=fake; its
stages in kwok-stages/) and the operator stand-in (lab/cluster/play_operator.py, mode file
<state>/operator-mode). GPUFABRIC_LAB_NODE_LEASE_SECONDS (at least 40) lengthens the simulated
kubelets' Leases (node_lease_seconds). After the API server is ready, RBAC is applied: the lab's own identities
(rbac.yaml) and the collection's shipped RBAC (docs/rbac/gpufabric-rollout.yaml).
Ports are chosen free at start (the previous ones are kept when still free); a start where a
component ends early is tried once more on fresh ports. Kubeconfigs:
<state>/admin.kubeconfig (system:masters, for the lab's set-up), <state>/kubeconfig (the
collection's least-privilege identity `gpufabric-rollout`), <state>/operator.kubeconfig (the
operator stand-in). Stop checks each pid's command line before signalling it.
Run by lab/kube.sh with the project's Python (needs `cryptography`).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pki

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "operator-standin"]
STANDIN = REPO / "lab" / "cluster" / "play_operator.py"
BINARIES = COMPONENTS[:-1]
SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_ANNOTATION = "kwok.x-k8s.io/node=fake"
# kwok renews each simulated kubelet's Lease every quarter of its duration: 40 s (kwok-stages/kwok.yaml)
# as a kubelet's, a renewal every 10 s. GPUFABRIC_LAB_NODE_LEASE_SECONDS lengthens it for the
# benchmarks of thousands of Nodes on one small machine (4,096 Nodes renew some 410 times a second, and
# the API server and etcd that serve them share the CPUs with the run being measured); the node
# lifecycle controller's grace period follows it, 10 s longer, as its default 50 s is for 40 s.
NODE_LEASE_VARIABLE = "GPUFABRIC_LAB_NODE_LEASE_SECONDS"


def node_lease_seconds() -> Optional[int]:
    """The Lease duration GPUFABRIC_LAB_NODE_LEASE_SECONDS sets, or None (kwok.yaml's 40 s)."""
    raw = os.environ.get(NODE_LEASE_VARIABLE, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 40:
        raise SystemExit(f"{NODE_LEASE_VARIABLE}: a whole number of seconds, at least 40; got {raw!r}")
    return int(raw)


def node_lease_args(template: str) -> List[str]:
    """[template filled with the Lease duration and the grace period 10 s longer], or [] without the variable."""
    lease = node_lease_seconds()
    return [] if lease is None else [template.format(lease=lease, grace=lease + 10)]


# RBAC applied at every start: the lab's own identities, then the collection's shipped RBAC
# bound to its identity (the binding is the lab's; the roles are the collection's).
RBAC_FILES = [HERE / "rbac.yaml", REPO / "docs" / "rbac" / "gpufabric-rollout.yaml"]
READY_TIMEOUT = 90
# The processes this invocation started: whether one of them exited is read from its own handle
# (exit status or signal), not guessed from /proc.
_SPAWNED: Dict[str, subprocess.Popen[bytes]] = {}


class StartError(RuntimeError):
    pass


class EndedEarly(StartError):
    """A component ended during the start (a port taken meanwhile, a crash): worth one more try."""


def log(msg: str) -> None:
    print("[kube] " + msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- state
class State:
    def __init__(self, root: Path, bindir: Optional[Path] = None):
        self.root = root.resolve()
        self.bin = bindir.resolve() if bindir else None
        self.pki = self.root / "pki"
        self.logs = self.root / "logs"
        self.run = self.root / "run"
        self.etcd_data = self.root / "etcd"

    def pidfile(self, name: str) -> Path:
        return self.run / (name + ".pid")

    def ports(self) -> Dict[str, int]:
        try:
            return {k: int(v) for k, v in json.loads((self.root / "ports.json").read_text()).items()}
        except (OSError, ValueError):
            return {}

    def kubeconfig(self, who: str) -> Path:
        return self.root / {"admin": "admin.kubeconfig", "gpufabric-rollout": "kubeconfig"}.get(
            who, who + ".kubeconfig"
        )


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(taken: List[int]) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in taken:
            return port


def choose_ports(state: State) -> Dict[str, int]:
    old, out = state.ports(), {}
    for name in ("etcd_client", "etcd_peer", "apiserver"):
        port = old.get(name)
        out[name] = port if port and _port_free(port) and port not in out.values() else _free_port(list(out.values()))
    (state.root / "ports.json").write_text(json.dumps(out) + "\n")
    return out


# ------------------------------------------------------------------------------------- processes
def _cmdline(pid: int) -> List[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def running_pid(state: State, name: str) -> Optional[int]:
    """The pid of our component `name`, or None (a recycled pid is not ours: argv[0] must be the
    component's binary and the command line must name this state directory)."""
    try:
        pid = int(state.pidfile(name).read_text().strip())
    except (OSError, ValueError):
        return None
    argv = _cmdline(pid)
    ours = (str(STANDIN) in argv) if name == "operator-standin" else bool(argv) and os.path.basename(argv[0]) == name
    if not ours or not any(str(state.root) in a for a in argv):
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                return None
    except OSError:
        return None
    return pid


def spawn(state: State, name: str, argv: List[str], env: Optional[Dict[str, str]] = None) -> int:
    state.logs.mkdir(parents=True, exist_ok=True)
    state.run.mkdir(parents=True, exist_ok=True)
    with open(state.logs / (name + ".log"), "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(state.root),
            env=env,
        )
    state.pidfile(name).write_text(f"{proc.pid}\n")
    _SPAWNED[name] = proc
    return proc.pid


def exited(state: State, name: str) -> Optional[str]:
    """How component `name` ended ("exit status 1", "killed by signal 9"), or None while it runs."""
    proc = _SPAWNED.get(name)
    if proc is None:
        return None if running_pid(state, name) else "not running"
    code = proc.poll()
    if code is None:
        return None
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def stop_component(state: State, name: str, timeout: float = 15.0) -> bool:
    pid = running_pid(state, name)
    if pid is None:
        state.pidfile(name).unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and running_pid(state, name) == pid:
        time.sleep(0.05)
    if running_pid(state, name) == pid:
        os.kill(pid, signal.SIGKILL)
        while running_pid(state, name) == pid:
            time.sleep(0.05)
    state.pidfile(name).unlink(missing_ok=True)
    return True


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ------------------------------------------------------------------------------------------ HTTP
class Api:
    """Just enough of a client for start-up checks: HTTPS with the admin's client certificate."""

    def __init__(self, state: State, port: int):
        files = pki.ensure(state.pki)
        self.ctx = ssl.create_default_context(cafile=str(files["ca"]))
        self.ctx.load_cert_chain(str(files["admin"]) + ".crt", str(files["admin"]) + ".key")
        self.port = port

    def call(self, method: str, path: str, body: Optional[dict] = None) -> Tuple[int, str]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=5)
        try:
            data = None if body is None else json.dumps(body)
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read().decode(errors="replace")
        finally:
            conn.close()

    def ok(self, path: str) -> bool:
        try:
            return self.call("GET", path)[0] == 200
        except (OSError, http.client.HTTPException):
            return False


# ---------------------------------------------------------------------------------- kubeconfigs
def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca: Path, cert_stem: Path, user: str, cluster: str = "gpufabric-lab"):
    """A kubeconfig with the CA and the client certificate embedded (it can be copied elsewhere)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(Path(str(cert_stem) + ".crt")),
                    "client-key-data": _b64(Path(str(cert_stem) + ".key")),
                },
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }
    tmp = path.with_suffix(".tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)  # JSON is YAML; every client reads it
        fh.write("\n")
    tmp.replace(path)


# ------------------------------------------------------------------------------------ arguments
def args_etcd(state: State, files: Dict[str, Path], ports: Dict[str, int]) -> List[str]:
    peer = f"http://127.0.0.1:{ports['etcd_peer']}"
    client = f"https://127.0.0.1:{ports['etcd_client']}"
    return [
        str(state.bin / "etcd"),
        "--name=lab",
        f"--data-dir={state.etcd_data}",
        "--listen-client-urls=" + client,
        "--advertise-client-urls=" + client,
        "--listen-peer-urls=" + peer,
        "--initial-advertise-peer-urls=" + peer,
        "--initial-cluster=lab=" + peer,
        f"--cert-file={files['etcd-server']}.crt",
        f"--key-file={files['etcd-server']}.key",
        "--client-cert-auth=true",
        f"--trusted-ca-file={files['ca']}",
        # The lab's cluster is disposable: no fsync per write (a real cluster keeps it).
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def args_apiserver(state: State, files: Dict[str, Path], ports: Dict[str, int]) -> List[str]:
    return [
        str(state.bin / "kube-apiserver"),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports['apiserver']}",
        f"--etcd-servers=https://127.0.0.1:{ports['etcd_client']}",
        f"--etcd-cafile={files['ca']}",
        f"--etcd-certfile={files['apiserver-etcd-client']}.crt",
        f"--etcd-keyfile={files['apiserver-etcd-client']}.key",
        f"--tls-cert-file={files['apiserver']}.crt",
        f"--tls-private-key-file={files['apiserver']}.key",
        f"--client-ca-file={files['ca']}",
        "--authorization-mode=Node,RBAC",
        "--anonymous-auth=false",
        "--enable-admission-plugins=NodeRestriction",
        "--service-account-issuer=" + SA_ISSUER,
        f"--service-account-key-file={files['sa_pub']}",
        f"--service-account-signing-key-file={files['sa_key']}",
        "--service-cluster-ip-range=" + SERVICE_CIDR,
        "--allow-privileged=true",
        # No other apiserver and no routable address: nothing would reach the default
        # Service's endpoints, and loopback ones are refused by validation.
        "--endpoint-reconciler-type=none",
        f"--audit-policy-file={HERE / 'audit-policy.yaml'}",
        f"--audit-log-path={state.logs / 'audit.log'}",
        "--audit-log-maxsize=100",
        "--audit-log-maxbackup=1",
        "--profiling=false",
    ]


def args_controller_manager(state: State, files: Dict[str, Path]) -> List[str]:
    return [
        str(state.bin / "kube-controller-manager"),
        f"--kubeconfig={state.kubeconfig('controller-manager')}",
        "--secure-port=0",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={files['sa_key']}",
        f"--root-ca-file={files['ca']}",
        f"--cluster-signing-cert-file={files['ca']}",
        f"--cluster-signing-key-file={files['ca_key']}",
        "--service-cluster-ip-range=" + SERVICE_CIDR,
        "--cluster-name=gpufabric-lab",
        "--leader-elect=false",
        "--profiling=false",
        *node_lease_args("--node-monitor-grace-period={grace}s"),
    ]


def args_scheduler(state: State) -> List[str]:
    return [
        str(state.bin / "kube-scheduler"),
        f"--kubeconfig={state.kubeconfig('scheduler')}",
        "--secure-port=0",
        "--leader-elect=false",
        "--profiling=false",
    ]


def args_standin(state: State) -> List[str]:
    mode = state.root / "operator-mode"
    if not mode.exists():
        mode.write_text("ready\n")
    return [sys.executable, str(STANDIN), "--kubeconfig", str(state.kubeconfig("operator")), "--mode-file", str(mode)]


def args_kwok(state: State) -> List[str]:
    stages = HERE / "kwok-stages"
    configs = [stages / "kwok.yaml", *sorted(p for p in stages.glob("*.yaml") if p.name != "kwok.yaml")]
    return [
        str(state.bin / "kwok"),
        *(f"--config={c}" for c in configs),
        f"--kubeconfig={state.kubeconfig('kwok')}",
        "--manage-nodes-with-annotation-selector=" + KWOK_ANNOTATION,
        "--cidr=" + POD_CIDR,
        "--node-ip=127.0.0.1",
        # At INFO kwok logs every Lease renewal and Node patch: at 4,096 Nodes some 400 lines a second
        # with renewals every 10 s, 17 MB in 8 minutes with renewals every 40 s. Warnings and errors only.
        "--v=WARN",
        *node_lease_args("--node-lease-duration-seconds={lease}"),
    ]


# ---------------------------------------------------------------------------------------- start
def wait_for(what: str, check, timeout: float, state: State, component: str) -> None:
    log_file = state.logs / (component + ".log")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        how = exited(state, component)
        if how:
            raise EndedEarly(
                f"{component} ended ({how}) while waiting for {what}; last lines of {log_file}:\n{_tail(log_file)}"
            )
        time.sleep(0.1)
    raise StartError(f"{what} not reached within {timeout} s; last lines of {log_file}:\n{_tail(log_file)}")


def apply(state: State, files: List[Path]) -> None:
    argv = [str(state.bin / "kubectl"), "--kubeconfig", str(state.kubeconfig("admin")), "apply", "--server-side"]
    argv += ["--field-manager=gpufabric-lab", "--force-conflicts"]
    for f in files:
        argv += ["-f", str(f)]
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise StartError(f"kubectl apply of {', '.join(map(str, files))} failed:\n{res.stderr.strip()}")


def start(state: State) -> int:
    t0 = time.monotonic()
    node_lease_seconds()  # a wrong value stops here, before any component starts
    for name in BINARIES:
        if not (state.bin / name).is_file():
            raise StartError(f"no {name} binary in {state.bin} (lab/controlplane/build.sh builds it)")
    pids = {name: running_pid(state, name) for name in COMPONENTS}
    ports = state.ports()
    if all(pids.values()) and ports and Api(state, ports["apiserver"]).ok("/readyz"):
        log(f"already running (https://127.0.0.1:{ports['apiserver']})")
        # The checkout's RBAC may have changed since the start (a role that now prunes needs more).
        apply(state, RBAC_FILES)
        return 0
    if any(pids.values()):
        log("partly running: restarting every component")
        stop(state, purge=False, quiet=True)

    state.root.mkdir(parents=True, exist_ok=True)
    files = pki.ensure(state.pki)
    ports = choose_ports(state)
    server = f"https://127.0.0.1:{ports['apiserver']}"
    identities = {
        "admin": ("admin", "gpufabric-lab-admin"),
        "controller-manager": ("controller-manager", "system:kube-controller-manager"),
        "scheduler": ("scheduler", "system:kube-scheduler"),
        "kwok": ("kwok", "gpufabric-lab:kwok"),
        "operator": ("operator", "gpufabric-lab:operator-standin"),
        "gpufabric-rollout": ("gpufabric-rollout", "gpufabric-rollout"),
    }
    for who, (stem, user) in identities.items():
        write_kubeconfig(state.kubeconfig(who), server, files["ca"], files[stem], user)
    timings = {"pki": time.monotonic() - t0}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "ETCD"))}

    spawn(state, "etcd", args_etcd(state, files, ports), base_env)
    spawn(state, "kube-apiserver", args_apiserver(state, files, ports), base_env)
    api = Api(state, ports["apiserver"])
    wait_for("kube-apiserver /readyz", lambda: api.ok("/readyz"), READY_TIMEOUT, state, "kube-apiserver")
    timings["apiserver ready"] = time.monotonic() - t0
    # The controller manager gives the apiserver only about 10 s to report healthy and then exits:
    # on a loaded machine its RBAC bootstrap takes longer, so it (and the scheduler) start once the
    # apiserver is ready.
    spawn(state, "kube-controller-manager", args_controller_manager(state, files), base_env)
    spawn(state, "kube-scheduler", args_scheduler(state), base_env)
    apply(state, RBAC_FILES)
    # kwok reads no config from $HOME (~/.kwok/kwok.yaml would be loaded first otherwise).
    spawn(state, "kwok", args_kwok(state), dict(base_env, HOME=str(state.root)))
    spawn(state, "operator-standin", args_standin(state), base_env)
    # Pods can be created once the namespace's default ServiceAccount exists (admission requires
    # it): the controller manager's serviceaccount controller makes it.
    wait_for(
        "the default ServiceAccount (kube-controller-manager)",
        lambda: api.ok("/api/v1/namespaces/default/serviceaccounts/default"),
        READY_TIMEOUT,
        state,
        "kube-controller-manager",
    )
    for name in ("kube-scheduler", "kwok", "operator-standin"):
        how = exited(state, name)
        if how:
            raise EndedEarly(f"{name} ended ({how}); last lines of its log:\n{_tail(state.logs / (name + '.log'))}")
    timings["ready"] = time.monotonic() - t0
    (state.root / "start-times.json").write_text(json.dumps({k: round(v, 2) for k, v in timings.items()}) + "\n")
    log(
        "started in {:.1f} s (apiserver ready after {:.1f} s): {}".format(
            timings["ready"], timings["apiserver ready"], server
        )
    )
    return 0


def stop(state: State, purge: bool, quiet: bool = False) -> int:
    stopped = [name for name in reversed(COMPONENTS) if stop_component(state, name)]
    if purge and state.root.exists():
        shutil.rmtree(state.root)
    if not quiet:
        log(("stopped " + ", ".join(stopped)) if stopped else "not running")
        if purge:
            log("removed " + str(state.root))
    return 0


def status(state: State) -> int:
    ports = state.ports()
    pids = {name: running_pid(state, name) for name in COMPONENTS}
    ready = bool(ports) and all(pids.values()) and Api(state, ports["apiserver"]).ok("/readyz")
    if ready:
        print(
            f"running server=https://127.0.0.1:{ports['apiserver']} kubeconfig={state.kubeconfig('gpufabric-rollout')}"
        )
        print("  " + " ".join(f"{n}={p}" for n, p in pids.items()))
        return 0
    if any(pids.values()):
        print("degraded: " + " ".join(f"{n}={p or 'down'}" for n, p in pids.items()))
        return 3
    print("stopped")
    return 3


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--bin", type=Path)
    parser.add_argument("--purge", action="store_true")
    args = parser.parse_args(argv)
    state = State(args.state, args.bin)
    if args.command == "start":
        if args.bin is None:
            parser.error("start needs --bin")
        # One more attempt on fresh ports: a port found free can be taken by another process
        # before the component binds it.
        for attempt in (1, 2):
            try:
                return start(state)
            except StartError as exc:
                stop(state, purge=False, quiet=True)
                _SPAWNED.clear()
                if attempt == 2 or not isinstance(exc, EndedEarly):
                    log(f"ERROR: start failed: {exc}")
                    return 1
                log(f"start failed, trying again on fresh ports: {exc}")
                (state.root / "ports.json").unlink(missing_ok=True)
    if args.command == "stop":
        return stop(state, args.purge)
    return status(state)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
