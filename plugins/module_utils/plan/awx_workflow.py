# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX / Automation Controller workflow graphs as data (the ``gpufabric.rollout.awx_workflow_nodes`` filter
and ``playbooks/awx.yml`` use them): the nodes of a workflow job template, each with its success,
failure and always edges; ``WorkflowError`` for a missing or repeated identifier, an unknown stage, an
edge to an unknown node or a cycle.

Pure functions, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence


class WorkflowError(ValueError):
    """The workflow definition is not a valid AWX workflow graph; the message names the node."""


_EDGES = (("success", "success_nodes"), ("failure", "failure_nodes"), ("always", "always_nodes"))


def workflow_nodes(
    nodes: Sequence[Mapping[str, Any]], templates: Mapping[str, str], organization: str
) -> List[Dict[str, Any]]:
    """Expand ``[{identifier, stage, success, failure, always}]`` into ``awx.awx.workflow_job_template``
    ``workflow_nodes``: each node runs the job template named ``templates[stage]``.

    Refuses what AWX would refuse or run wrongly: duplicate identifiers, edges to unknown nodes,
    unknown stages, and cycles (AWX workflows are acyclic graphs).
    """
    identifiers: List[str] = []
    for index, node in enumerate(nodes or []):
        if not isinstance(node, Mapping) or not node.get("identifier"):
            raise WorkflowError(f"nodes[{index}]: every node needs an identifier")
        identifier = str(node["identifier"])
        if identifier in identifiers:
            raise WorkflowError(f"node {identifier}: the identifier is used twice")
        identifiers.append(identifier)
    if not identifiers:
        raise WorkflowError("a workflow needs at least one node")
    graph: Dict[str, List[str]] = {}
    out: List[Dict[str, Any]] = []
    for node in nodes:
        identifier = str(node["identifier"])
        stage = str(node.get("stage") or "")
        if stage not in templates:
            raise WorkflowError(f"node {identifier}: stage '{stage}' is not one of {', '.join(sorted(templates))}")
        related: Dict[str, List[Dict[str, str]]] = {}
        graph[identifier] = []
        for key, awx_key in _EDGES:
            targets = [str(t) for t in node.get(key) or []]
            for target in targets:
                if target not in identifiers:
                    raise WorkflowError(f"node {identifier}: {key} edge to unknown node '{target}'")
            graph[identifier].extend(targets)
            related[awx_key] = [{"identifier": t} for t in targets]
        out.append(
            {
                "identifier": identifier,
                "unified_job_template": {
                    "name": templates[stage],
                    "type": "job_template",
                    "organization": {"name": organization},
                },
                "related": related,
            }
        )
    _refuse_cycles(graph)
    return out


def _refuse_cycles(graph: Mapping[str, List[str]]) -> None:
    state: Dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: List[str]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            raise WorkflowError("the workflow has a cycle: " + " -> ".join([*path, node]))
        state[node] = 1
        for child in graph[node]:
            visit(child, [*path, node])
        state[node] = 2

    for node in graph:
        visit(node, [])
