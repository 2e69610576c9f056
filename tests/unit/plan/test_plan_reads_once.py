"""playbooks/plan.yml on three local-connection nodes (lab snapshots): the DOCA repository's index is
downloaded once per run, not once per node, and every node plans against it; a repository without an
index fails the plan naming the variable that points at it, after one request; imported again in the
same run (as site.yml imports it once per stage), it runs no task on a node already planned. The repository is the
DOCA fixture index (tests/unit/doca/fixtures/Packages) served on 127.0.0.1; the cluster part runs in
render mode, so no Kubernetes is asked."""

from __future__ import annotations

import functools
import gzip
import http.server
import importlib.util
import json
import sys
import threading
from pathlib import Path

import jinja2
import pytest
import yaml
from conftest import REPO
from role_runner import ansible_playbook

INDEX = "/doca/2.9.1/debian12/x86_64/Packages.gz"
DRIVER_LINE = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (lab@lab)\n"
NODES = ("gpu-a", "gpu-b", "gpu-c")


class Handler(http.server.SimpleHTTPRequestHandler):
    requests: list = []

    def do_GET(self):
        Handler.requests.append(self.path)
        super().do_GET()

    def log_message(self, *_args):
        pass


@pytest.fixture()
def repo(tmp_path):
    """(base URL, the requested paths) of a DOCA 2.9.1 repository for Debian 12 on 127.0.0.1."""
    root = tmp_path / "repo"
    (root / INDEX[1:]).parent.mkdir(parents=True)
    packages = (REPO / "tests" / "unit" / "doca" / "fixtures" / "Packages").read_bytes()
    (root / INDEX[1:]).write_bytes(gzip.compress(packages))
    Handler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Handler.requests
    server.shutdown()


def sysroot(tmp_path, name):
    spec = importlib.util.spec_from_file_location("snapshots_build", REPO / "lab" / "snapshots" / "build.py")
    snapshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(snapshots)
    root = Path(snapshots.materialize(name, str(tmp_path / name.replace("@", "_"))))
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(DRIVER_LINE)  # the lab's open driver, loaded
    return str(root)


def plan(tmp_path, base_url, playbook=REPO / "playbooks" / "plan.yml", *args):
    roots = [sysroot(tmp_path, f"dgx-h200-8x8@{i}") for i in (1, 2, 3)]
    node = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    lab = yaml.safe_load((REPO / "inventory" / "lab" / "group_vars" / "all" / "fabric.yml").read_text())
    cluster = yaml.safe_load((REPO / "inventory" / "lab" / "group_vars" / "all" / "cluster.yml").read_text())
    inventory = {
        "all": {
            "hosts": {"localhost": node},
            "children": {"gpu_nodes": {"hosts": {h: dict(node, gpufabric_sysroot=r) for h, r in zip(NODES, roots)}}},
            "vars": {
                "gpufabric_fabric": lab["gpufabric_fabric"],
                "gpufabric_rails": cluster["gpufabric_rails"],
                "gpufabric_k8s_mode": "render",
                "gpufabric_k8s_render_dir": str(tmp_path / "rendered"),
                "gpufabric_instance": "test",
                "plan_dir": str(tmp_path / "plan"),
                "plan_require_systemd": False,  # every node is this machine, which may be a container
                "network_operator_chart_path": str(REPO / "lab" / "charts" / "network-operator"),
                "gpu_operator_chart_path": str(REPO / "lab" / "charts" / "gpu-operator"),
                "doca_ofed_version": "2.9.1",
                "doca_ofed_repo_base_url": f"{base_url}/doca",
                "doca_ofed_repo_os": "debian12",
                "doca_ofed_gpg_key_fingerprints": ["0123456789ABCDEF0123456789ABCDEF01234567"],
            },
        }
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return ansible_playbook(tmp_path, "-i", str(tmp_path / "hosts.yml"), *args, str(playbook))


def test_the_index_is_read_once_per_run_and_every_node_plans_with_it(tmp_path, repo):
    base_url, requests = repo
    done = plan(tmp_path, base_url)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert requests == [INDEX]  # one download for three nodes (Packages.gz found: Packages is not asked)
    nodes = json.loads((tmp_path / "plan" / "plan.json").read_text())["node_plans"]
    assert sorted(nodes) == list(NODES)
    for name in NODES:
        doca = nodes[name]["doca_ofed"]
        assert (doca["repo_url"], doca["selected"]) == (f"{base_url}/doca/2.9.1/debian12/x86_64/", "2.9.1-0.1.4")
        assert doca["kernel_version"] == "24.10.OFED.24.10.1.1.4.1-1"


def test_a_repository_without_an_index_fails_naming_the_variable_after_one_read(tmp_path, repo):
    base_url, requests = repo
    done = plan(tmp_path, base_url + "/missing")
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"doca_ofed_repo_base_url: no Packages index at {base_url}/missing/doca/2.9.1/debian12/x86_64/" in out
    # one read of the repository (Packages.gz, then Packages), not one per node
    assert requests == ["/missing" + INDEX, "/missing" + INDEX[: -len(".gz")]]
    assert not (tmp_path / "plan" / "plan.json").exists()


PLAN_STAGE = {"ansible.builtin.import_playbook": str(REPO / "playbooks" / "plan.yml")}
NODE_CHECK_TASK = "TASK [gpufabric.rollout.plan : Read the node (facts, GPU/NIC/PCIe/NUMA topology"


def planned_twice(tmp_path, repo, *args):
    """The output of a run of a playbook that imports plan.yml twice, as site.yml imports it once per
    stage; the run passed and read the index once."""
    base_url, requests = repo
    twice = tmp_path / "twice.yml"
    twice.write_text(yaml.safe_dump([dict(PLAN_STAGE, name="stage one"), dict(PLAN_STAGE, name="stage two")]))
    done = plan(tmp_path, base_url, twice, *args)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert requests == [INDEX]
    return out


def test_a_second_import_in_the_same_run_runs_no_task_on_the_planned_nodes(tmp_path, repo):
    out = planned_twice(tmp_path, repo)
    node_play = "PLAY [Plan - read every GPU node and check its variables (nothing changes)]"
    assert out.count(node_play) == 2
    second = out.split(node_play)[2].split("PLAY [")[0]
    assert "skipping: no hosts matched" in second and "TASK [" not in second
    # every node's check ran once, in the first stage only
    assert out.count(NODE_CHECK_TASK) == 1
    assert sorted(json.loads((tmp_path / "plan" / "plan.json").read_text())["node_plans"]) == list(NODES)


def test_without_the_controller_a_second_import_skips_the_planned_nodes(tmp_path, repo):
    """--limit on the nodes alone: no summary, so each planned node skips the role's tasks."""
    out = planned_twice(tmp_path, repo, "--limit", "gpu_nodes")
    assert out.count(NODE_CHECK_TASK) == 2
    second = out.split(NODE_CHECK_TASK)[2].split("TASK [")[0]
    assert sorted(line for line in second.splitlines()[1:] if line) == [f"skipping: [{n}]" for n in NODES], second


def test_each_node_keeps_its_report_section_rendered_from_its_own_plan(tmp_path, repo):
    """The plan section of a node's report is node-report.j2 rendered with that node's plan (the plan
    lookup renders it with the plan as the template's only variable of the node)."""
    base_url, _requests = repo
    sections = tmp_path / "sections.yml"
    keep = {
        "name": "Keep each node's plan section",
        "ansible.builtin.copy": {
            "content": "{{ gpufabric_report_sections.plan }}",
            "dest": str(tmp_path / "section-{{ inventory_hostname }}.txt"),
            "mode": "0644",
        },
    }
    sections.write_text(
        yaml.safe_dump([PLAN_STAGE, {"name": "sections", "hosts": "gpu_nodes", "gather_facts": False, "tasks": [keep]}])
    )
    done = plan(tmp_path, base_url, sections)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    template = (REPO / "roles" / "plan" / "templates" / "node-report.j2").read_text()
    nodes = json.loads((tmp_path / "plan" / "plan.json").read_text())["node_plans"]
    for name in NODES:
        expected = jinja2.Environment(trim_blocks=True).from_string(template).render(__plan_node=nodes[name])
        section = (tmp_path / f"section-{name}.txt").read_text()
        assert section.strip() == expected.strip()
        assert f"sysroot: {nodes[name]['preflight']['sysroot']}" in section.splitlines()


def test_a_read_argument_a_template_takes_from_the_facts_is_read_with_its_checked_value(tmp_path, repo):
    """The node check reads the node before it checks, with the read's arguments rendered from the
    node's variables as they stand: a storage NIC that a template takes from the facts (none before
    setup's facts are known) is known only after the check, and the node is read again with it."""
    base_url, _requests = repo
    nics = "{{ ['mlx5_0'] if ansible_facts.kernel is defined else [] }}"
    done = plan(tmp_path, base_url, REPO / "playbooks" / "plan.yml", "-e", json.dumps({"topology_storage_nics": nics}))
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    for name in NODES:
        record = json.loads((tmp_path / "plan" / "discovery" / f"{name}.json").read_text())
        roles = {nic["rdma_device"]: nic["role"] for nic in record["topology"]["nics"]}
        assert roles["mlx5_0"] == "storage" and roles["mlx5_1"] == "compute", roles
