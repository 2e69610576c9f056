"""A two-node lab of the fault suite's own (fault-node-01/02) with a private control plane, and
host-layer runs against it, watched line by line.

It is started the way lab/lab.sh starts any lab (LAB_NODES, LAB_INVENTORY and GPUFABRIC_KUBE_DIR
name this lab's nodes, inventory and cluster, so it runs beside `make lab` and other tests), and
its playbooks run the way lab/lab.sh runs them (the lab's transport, the CRD directory, a fresh
TMPDIR), with the cluster, report and plan paths of this lab's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parents[2]
NODES = ("fault-node-01", "fault-node-02")
SNAPSHOTS = {"fault-node-01": "dgx-h200-8x8@1", "fault-node-02": "dgx-h200-8x8@2"}
# Beside inventory/lab's depth: its group_vars (linked) find the checkout at inventory_dir/../..
INVENTORY = REPO / ".lab" / "fault-inventory"
SYSROOT = "/var/lib/gpufabric-lab/sysroot"
RECAP = re.compile(
    r"^(?P<host>\S+)\s+: ok=\d+\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)"
)
# A task result line of the default callback: "changed: [host]", "ok: [host] => ...", ...
RESULT = re.compile(r"^(?P<status>ok|changed|fatal|failed|skipping|included): \[(?P<host>[^\]\s]+)")


@dataclass
class Run:
    """One ansible-playbook run: exit status, recap per host, and its output (also in `log`)."""

    rc: int
    log: Path
    text: str
    recap: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def changed(self, host: str) -> int:
        return self.recap[host]["changed"]

    def clean(self, host: str) -> bool:
        r = self.recap.get(host)
        return r is not None and r["failed"] == 0 and r["unreachable"] == 0

    def changed_tasks(self, host: str) -> List[str]:
        """The names of the tasks that changed something on host, in order: those reported
        `changed`, and failed ones whose result says changed: true (the recap counts neither a
        failed task's change nor a rescued one's)."""
        out, task, failed = [], "", False
        for line in self.text.splitlines():
            if line.startswith("TASK ["):
                task, failed = line[6:].split("] ", 1)[0].rstrip("]* "), False
            m = RESULT.match(line)
            if m:
                failed = m["status"] in ("fatal", "failed") and m["host"] == host
                if m["status"] == "changed" and m["host"] == host:
                    out.append(task)
            elif failed and line.strip() == "changed: true":
                out.append(task)
                failed = False
        return out


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


class HostLab:
    def __init__(self, state: Path):
        self.state = state
        self.kube_dir = state / "kube"
        self.report = state / "rollout-report.txt"
        self.logs = state / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = dict(
            os.environ,
            PATH=f"{REPO / '.venv' / 'bin'}:{REPO / '.tools' / 'bin'}:{os.environ['PATH']}",
            ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
            PYTHONUNBUFFERED="1",
            GPUFABRIC_KUBE_DIR=str(self.kube_dir),
            GPUFABRIC_LAB_CONNECTION=os.environ.get("GPUFABRIC_LAB_CONNECTION", "mitogen"),
            LAB_NODES=" ".join(NODES),
            LAB_INVENTORY=str(INVENTORY),
        )
        self._base_env = dict(self.env)  # before the transport's settings (_lab_env)
        self.env.update(self._lab_env())

    def _bash(self, script: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", f"source lab/common.sh && {script}"],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            **kw,
        )

    def _lab_env(self, connection: Optional[str] = None) -> Dict[str, str]:
        """What lab/common.sh's lab_connection_env exports for the lab's transport (or `connection`)."""
        env = dict(self._base_env, GPUFABRIC_LAB_CONNECTION=connection) if connection else self._base_env
        out = subprocess.run(
            ["bash", "-c", 'source lab/common.sh && lab_connection_env && env | grep -E "^(ANSIBLE_|GPUFABRIC_LAB)"'],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        env = dict(line.split("=", 1) for line in out.splitlines())
        env.setdefault("ANSIBLE_STRATEGY_PLUGINS", "")
        return env

    # -- the lab ----------------------------------------------------------------------------
    def start(self) -> None:
        """Nodes, the private cluster with their Nodes, and lab/prepare.yml, as lab/lab.sh starts them."""
        INVENTORY.mkdir(parents=True, exist_ok=True)
        link = INVENTORY / "group_vars"
        if not link.is_symlink():
            link.symlink_to(Path("..") / ".." / "inventory" / "lab" / "group_vars")
        hosts = {n: {"gpufabric_lab_snapshot": s} for n, s in SNAPSHOTS.items()}
        controller = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
        inv = {"all": {"children": {"gpu_nodes": {"hosts": hosts}}, "hosts": {"localhost": controller}}}
        (INVENTORY / "hosts.yml").write_text("---\n" + yaml.safe_dump(inv, sort_keys=False))
        log = self.logs / "start.log"
        with open(log, "w") as out:
            rc = subprocess.run(
                [str(REPO / "lab" / "lab.sh"), "start"],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        assert rc == 0, f"the fault lab did not start:\n{log.read_text()[-4000:]}"
        self.crds = self._bash("lab_crds_dir").stdout.strip()

    def down(self) -> None:
        """Remove this lab's nodes (by name) and its cluster; only what start() made."""
        subprocess.run([str(REPO / "lab" / "nodes.sh"), "down", *NODES], cwd=REPO, env=self.env, check=False)
        subprocess.run([str(REPO / "lab" / "kube.sh"), "stop", "--purge"], cwd=REPO, env=self.env, check=False)
        shutil.rmtree(INVENTORY, ignore_errors=True)

    def start_node(self, name: str) -> None:
        """Start a stopped node again (lab/nodes.sh up: boots it and waits for SSH and sudo)."""
        subprocess.run([str(REPO / "lab" / "nodes.sh"), "up", name], cwd=REPO, env=self.env, check=True)

    def stop_node(self, name: str) -> None:
        """The node loses power: every process of it dies at once (podman kill, SIGKILL to its init),
        and the call returns once it is down. Not `podman stop`: its second of orderly shutdown
        (systemd stops services and empties /tmp) raced a module already running on the node, which
        then failed on its own vanished files instead of losing its connection, depending on how far
        the module had got when the stop came."""
        subprocess.run(["podman", "kill", name], check=True, capture_output=True)
        subprocess.run(["podman", "wait", name], check=True, capture_output=True)

    def sh(self, node: str, script: str, check: bool = True) -> str:
        """A shell script run as root on a node (podman exec: the test's own access, not the roles')."""
        done = subprocess.run(["podman", "exec", node, "sh", "-c", script], capture_output=True, text=True, check=False)
        if check:
            assert done.returncode == 0, f"{node}: {script}: {done.stdout}{done.stderr}"
        return done.stdout

    # -- runs -------------------------------------------------------------------------------
    def playbook(
        self,
        name: str,
        *args: str,
        watch: Optional[Callable[[str], None]] = None,
        timeout: float = 600,
        connection: Optional[str] = None,
    ) -> Run:
        """playbooks/hosts.yml (or ARGS' playbook) against this lab, as lab/lab.sh runs it; `watch`
        sees each output line as it comes. `connection` (one of lab/common.sh's LAB_CONNECTIONS) runs it
        over that transport, with what lab_connection_env sets for it, whatever the lab's."""
        env = dict(self.env, **self._lab_env(connection)) if connection else self.env
        extra = [
            "-e",
            f"gpufabric_lab_connection={env['GPUFABRIC_LAB_CONNECTION']}",
            "-e",
            f"network_operator_crds_dir={self.crds}",
            "-e",
            f"gpu_operator_crds_dir={self.crds}",
            "-e",
            f"gpufabric_kubeconfig={self.kube_dir / 'kubeconfig'}",
            "-e",
            f"gpufabric_report_path={self.report}",
            "-e",
            f"plan_dir={self.state / 'plan'}",
            "-e",
            f"gpufabric_k8s_render_dir={self.state / 'rendered'}",
        ]
        tmp = Path(tempfile.mkdtemp(prefix="gf."))
        log = self.logs / f"{name}.log"
        # A report of an earlier run must not pass for this run's.
        self.report.unlink(missing_ok=True)
        lines: List[str] = []
        try:
            proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(INVENTORY), *extra, *args],
                cwd=REPO,
                env=dict(env, TMPDIR=str(tmp)),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            killer = threading.Timer(timeout, proc.kill)
            killer.start()
            with open(log, "w") as out:
                for line in proc.stdout:
                    out.write(line)
                    out.flush()
                    lines.append(line)
                    if watch:
                        watch(plain(line.rstrip("\n")))
            rc = proc.wait()
            killer.cancel()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if self.report.exists():
            shutil.copy(self.report, self.logs / f"{name}.report.txt")
        text = plain("".join(lines))
        recap = {}
        for line in text.split("PLAY RECAP", 1)[-1].splitlines():
            m = RECAP.match(line)
            if m:
                recap[m["host"]] = {k: int(m[k]) for k in ("changed", "unreachable", "failed")}
        return Run(rc=rc, log=log, text=text, recap=recap)

    # -- the cluster ------------------------------------------------------------------------
    def nodes(self) -> Dict[str, dict]:
        """The lab's Node objects (as the administrator reads them), by name."""
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kube_dir / "admin.kubeconfig"), "get", "nodes", "-o", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return {n["metadata"]["name"]: n for n in json.loads(out)["items"] if n["metadata"]["name"] in NODES}


def node_fingerprint(lab: HostLab, node: str) -> Dict[str, str]:
    """What the host layer sets on a node, item by item: the NICs' QoS and link state (the lab's
    hardware tree), packages and holds, loaded stack, and every file it writes under /etc and
    /usr/local (content hashes), so that a later reading names what changed."""
    script = f"""
cd {SYSROOT}/sys/class/net || exit 1
for d in *; do
  for f in $d/lab_dcbnl.json $d/mtu $d/qos/trust $d/qos/dscp2prio $d/ecn/roce_np/enable/* $d/ecn/roce_rp/enable/* \
           $d/ecn/roce_np/cnp_dscp $d/ecn/roce_np/cnp_802p_prio; do
    [ -f "$f" ] && echo "nic $f $(md5sum < "$f" | cut -c1-12)"
  done
done
dpkg-query -W -f='pkg ${{Package}} ${{Version}} ${{db:Status-Abbrev}}\\n'
apt-mark showhold | sed 's/^/hold /'
find /etc /usr/local -xdev -type f -newer /etc/hostname \\
  ! -path '/etc/ld.so.cache' ! -path '/etc/machine-id' ! -path '/etc/mtab' -print0 2>/dev/null |
  xargs -0 -r md5sum | awk '{{print "file " $2 " " substr($1,1,12)}}'
"""
    out = lab.sh(node, script)
    items = {}
    for line in out.splitlines():
        kind, rest = line.split(" ", 1)
        key, _sep, value = rest.rpartition(" ")
        items[f"{kind} {key}"] = value
    return items


def differences(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    keys = sorted(set(before) | set(after))
    return [f"{k}: {before.get(k, '-')} -> {after.get(k, '-')}" for k in keys if before.get(k) != after.get(k)]


def wait_for(check: Callable[[], bool], timeout: float = 30) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return check()
