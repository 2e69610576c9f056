# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The review files of the switch plan, one per leaf, for the network team or a later apply:

- NVUE: ``LEAF.nvue.yaml``, the ``set`` tree as ``nv config patch FILE`` reads it (then
  ``nv config apply``); the same tree is the body of a root PATCH on a revision of the NVUE REST API.
- SONiC: ``LEAF.sonic.yaml``, a playbook for that one switch whose tasks call the
  dellemc.enterprise_sonic QoS modules with the planned arguments (state merged).

Plus ``ports.yaml``: every leaf's ports with the rail and node each faces. Each file is one object
that the render_files module writes as YAML (module_utils stay free of PyYAML).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports as _ports


def leaf_file(name: str, leaf: Mapping[str, Any]) -> Dict[str, Any]:
    if leaf["os"] == "nvue":
        return {"file": f"{name}.nvue.yaml", "object": [{"set": leaf["qos"]}]}
    tasks = [
        {"name": f"{module} for the lossless RoCE class", f"dellemc.enterprise_sonic.{module}": arguments}
        for module, arguments in leaf["qos"].items()
    ]
    play = [{"name": f"Lossless RoCE QoS of {name}", "hosts": name, "gather_facts": False, "tasks": tasks}]
    return {"file": f"{name}.sonic.yaml", "object": play}


def files(leaves: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """[{file, object}] for the render_files module's objects."""
    out = [leaf_file(name, leaf) for name, leaf in sorted(leaves.items())]
    ports = {
        name: {port: dict(facing) for port, facing in leaf["ports"].items()} for name, leaf in sorted(leaves.items())
    }
    out.append({"file": "ports.yaml", "object": ports})
    return out


def summary_lines(switches: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per leaf for the plan summary."""
    out = []
    for name, leaf in sorted(((switches or {}).get("leaves") or {}).items()):
        rails = sorted({p["rail"] for p in leaf["ports"].values()})
        faced = [p for p, f in leaf["ports"].items() if f["node"]]
        out.append(
            f"switch {name} ({leaf['os']}): rails {', '.join(map(str, rails))}, {len(faced)} of "
            f"{len(leaf['ports'])} ports face GPU nodes ({_ports.compress(leaf['ports'])}); "
            f"QoS in switches/{name}.{leaf['os']}.yaml"
        )
    return out
