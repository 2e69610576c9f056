"""The rollout report (playbooks/templates/rollout-report.txt.j2) is one pass over the GPU nodes: each
node's variables are read a fixed number of times, whatever the number of nodes, so building the report
of a 4,096-node cluster costs 64 times that of 64 nodes, not more (benchmarks/bench_cluster_layer.py
measures it). A template that looked up every node for each node would fail here. Nodes the plan read
from their stored discovery (outside --limit or the job slice) are not read at all: they are named
together, at the end."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml
from hostvars_support import CountingHostvars

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "playbooks" / "templates" / "rollout-report.txt.j2"


def render(n: int, stored: int = 0, plan: bool = False):
    """The report of n nodes, the last `stored` of them outside the run (the plan's source "stored");
    with `plan`, the plan names the sources even when every node is in the run."""
    hosts = [f"gpu-node-{i:04d}" for i in range(n)]
    hostvars = CountingHostvars({h: {"gpufabric_report_sections": {"plan": f"{h} planned"}} for h in hosts})
    hostvars["localhost"] = {"gpufabric_report_sections": {"cluster": "objects"}}
    if stored or plan:
        sources = {h: {"source": "stored" if i >= n - stored else "this run"} for i, h in enumerate(hosts)}
        hostvars["localhost"]["gpufabric_plan"] = {"nodes": sources}
    order = yaml.safe_load((REPO / "playbooks" / "vars" / "report.yml").read_text())["__report_order"]
    env = jinja2.Environment(undefined=jinja2.Undefined, trim_blocks=True)
    text = env.from_string(TEMPLATE.read_text()).render(
        groups={"gpu_nodes": hosts}, hostvars=hostvars, __report_order=order
    )
    return text, hostvars.reads, hosts


def test_each_node_is_read_a_fixed_number_of_times_whatever_the_count():
    small_text, small, small_hosts = render(8)
    text, reads, hosts = render(512)
    assert f"== node {hosts[-1]} ==" in text and f"{hosts[-1]} planned" in text and "== cluster ==" in text
    per_node = {reads[h] for h in hosts}
    assert len(per_node) == 1 and per_node == {small[small_hosts[0]]}, per_node
    assert sum(reads.values()) - reads["localhost"] == len(hosts) * per_node.pop()
    assert reads["localhost"] == small["localhost"]
    assert len(text.splitlines()) / len(small_text.splitlines()) < 512 / 8 + 1


def test_nodes_outside_the_run_are_not_read_and_are_named_together():
    text, reads, hosts = render(512, stored=500)
    inside, outside = hosts[:12], hosts[12:]
    assert all(reads[h] == 0 for h in outside), "a node outside the run was read"
    assert all(reads[h] > 0 and f"== node {h} ==" in text and f"{h} planned" in text for h in inside)
    assert not any(f"== node {h} ==" in text for h in outside)
    assert "== GPU nodes outside this run ==" in text
    assert "500 GPU node(s) were not in this run" in text
    assert ", ".join(outside[:20]) + " and 480 more" in text
    assert outside[20] not in text
    assert "== cluster ==" in text and text.index("== GPU nodes outside") < text.index("== cluster ==")
    # every node in the run: the report is the one without the plan's sources, with no such part
    full, _reads, _hosts = render(8)
    with_plan, _reads, _hosts = render(8, plan=True)
    assert with_plan == full and "outside this run" not in full
    # the first node only in the run
    one, _reads, _hosts = render(8, stored=7)
    assert "== node gpu-node-0000 ==" in one and "7 GPU node(s) were not in this run" in one
    assert "gpu-node-0001, gpu-node-0002" in one and "more" not in one
