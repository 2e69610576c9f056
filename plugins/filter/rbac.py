# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/rbac.yml: the least-privilege RBAC of a plan (plan/rbac.py), and its YAML."""

from __future__ import annotations

import yaml
from ansible.errors import AnsibleFilterError

# The variables of playbooks/rbac.yml that name the subject, for the messages.
SUBJECT_VARIABLES = {"kind": "rbac_subject_kind", "name": "rbac_subject_name", "namespace": "rbac_subject_namespace"}


def rbac_subject(kind, name="gpufabric-rollout", namespace=None):
    """The subject to bind, checked: {kind, name} (and namespace for a ServiceAccount)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _plan_rbac

    problems = _plan_rbac.check_subject(kind, name, namespace or None, SUBJECT_VARIABLES)
    if problems:
        raise AnsibleFilterError("The RBAC is refused: " + "; ".join(problems))
    subject = {"kind": str(kind), "name": str(name)}
    if kind == "ServiceAccount":
        subject["namespace"] = str(namespace)
    return subject


def rbac_manifest(cluster_intent, filesystems, subject, job_image, validate_namespace):
    """The RBAC manifest (kind List) for the checked cluster intent and the GPU nodes' filesystems
    (their checked gpufabric_storage entries, one definition per name kept)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _plan_rbac

    by_name = {}
    for fs in filesystems or []:
        by_name.setdefault(fs.get("name"), dict(fs))
    try:
        inputs = _plan_rbac.inputs_from_intent(
            _plain(dict(cluster_intent or {})),
            _plain(list(by_name.values())),
            _plain(dict(subject or {})),
            job_image,
            validate_namespace,
        )
        return _plan_rbac.manifest(inputs)
    except _plan_rbac.RbacError as exc:
        raise AnsibleFilterError("The RBAC is refused: " + "; ".join(exc.problems)) from None


class _Dumper(yaml.SafeDumper):
    """Block style with sequences indented under their key; short lists of strings in flow style
    (``verbs: [get, list]``); multi-line strings (the admission policies' CEL) as literal blocks."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _represent_list(dumper, data):
    flow = all(isinstance(v, str) and "\n" not in v for v in data) and sum(len(v) + 2 for v in data) <= 72
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow and bool(data))


def _represent_str(dumper, data):
    # a CEL expression that starts with '!' or '[' folded rather than quoted (the same string)
    style = "|" if "\n" in data else ">" if data[:1] in ("!", "[") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)
_Dumper.add_representer(str, _represent_str)


def rbac_yaml(manifest, header=None):
    """The manifest as YAML text, ``header`` (a string or a list of lines) first as ``#`` comments."""
    lines = header.splitlines() if isinstance(header, str) else list(header or [])
    comment = "".join(f"# {line}".rstrip() + "\n" for line in lines)
    body = yaml.dump(
        _plain(manifest), Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=1000, allow_unicode=True
    )
    return comment + body


def _plain(value):
    """Ansible's own mapping and string types as plain dict, list and str (the safe dumper knows only those)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


class FilterModule:
    def filters(self):
        return {"rbac_subject": rbac_subject, "rbac_manifest": rbac_manifest, "rbac_yaml": rbac_yaml}
