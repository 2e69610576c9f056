#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: render_files
short_description: Make a directory of YAML files exactly a given set, in one call
version_added: 0.1.0
description:
  - Writes every file of O(objects) (each object as one YAML document) and O(files) (text as
    given) into O(path), rewriting only those whose content or mode differs, and with O(prune)
    removes the C(*.yaml) files of O(path) that are not in the set. Render mode (GitOps) uses it
    for each component's directory.
  - One call instead of a M(ansible.builtin.copy) per file, a M(ansible.builtin.find) and a
    M(ansible.builtin.file) per stale file; a component renders tens of objects on every run.
  - Objects are written as C(to_nice_yaml(indent=2, sort_keys=false)) writes them.
options:
  path:
    description: The directory; created (mode 0755) when missing.
    type: path
    required: true
  objects:
    description: Files that hold one object each, written as YAML in the order of its keys.
    type: list
    elements: dict
    default: []
    suboptions:
      file:
        description: The file name, without a directory.
        type: str
        required: true
      object:
        description: The object.
        type: raw
        required: true
  files:
    description: Files written with the text given.
    type: list
    elements: dict
    default: []
    suboptions:
      file:
        description: The file name, without a directory.
        type: str
        required: true
      content:
        description: The text.
        type: str
        required: true
  prune:
    description: Remove the C(*.yaml) files of O(path) that are in neither O(objects) nor O(files).
    type: bool
    default: true
  mode:
    description: The mode of each file written.
    type: str
    default: "0644"
attributes:
  check_mode:
    description: Compares and reports what it would write and remove; changes nothing.
    support: full
  diff_mode:
    description: The text of each file before and after.
    support: full
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Write the objects, the Helm values and the kustomization of the component
  gpufabric.rollout.render_files:
    path: /srv/gitops/network-operator
    objects: "{{ planned_objects | gpufabric.rollout.k8s_render_files }}"
    files:
      - file: values.yaml
        content: "{{ helm_values | to_nice_yaml(indent=2) }}"
"""

RETURN = r"""
written:
  description: The files this call wrote (or would write in check mode), in the order given.
  returned: always
  type: list
  elements: str
  sample: [rail0-nad.yaml]
removed:
  description: The C(*.yaml) files it removed (or would remove) because the set no longer has them.
  returned: always
  type: list
  elements: str
  sample: [rail7-nad.yaml]
"""

import fnmatch
import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import atomic_file as _atomic_file

try:
    import yaml
except ImportError:  # pragma: no cover - kubernetes.core needs PyYAML on the same host
    yaml = None
    YAML_ERROR = traceback.format_exc()
else:
    YAML_ERROR = None

PRUNED = "*.yaml"


class RenderError(Exception):
    pass


def as_yaml(value):
    """The text to_nice_yaml(indent=2, sort_keys=false) gives for plain data."""
    return yaml.safe_dump(value, indent=2, allow_unicode=True, default_flow_style=False, sort_keys=False)


def wanted(objects, files):
    """{file name: text} of the set, in the order given; a name with a directory, or given twice, is refused."""
    out = {}
    for name, text in [(o["file"], as_yaml(o["object"])) for o in objects] + [(f["file"], f["content"]) for f in files]:
        if not name or name in (".", "..") or "/" in name:
            raise RenderError(f"render_files: {name!r} is not a file name (a name without a directory)")
        if name in out:
            raise RenderError(f"render_files: {name} is given twice")
        out[name] = text
    return out


def read_text(path):
    """The file's text; None when there is none, it is not UTF-8, or it is a symlink (not followed: it is
    replaced by the rendered file)."""
    raw = _atomic_file.read_bytes(path)
    try:
        return None if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def changes(path, want, mode, prune):
    """(written, removed, before): the files of `want` whose text or mode differs, the stale *.yaml files,
    and the old text of each."""
    present = sorted(os.listdir(path)) if os.path.isdir(path) else []
    written, before = [], {}
    for name, text in want.items():
        target = os.path.join(path, name)
        # a symlink (to anything) is replaced by the rendered file, never written through
        if os.path.lexists(target) and not os.path.islink(target) and not os.path.isfile(target):
            raise RenderError(f"render_files: {target} exists and is not a file; move it away, or render elsewhere")
        old = read_text(target)
        if old != text or (os.lstat(target).st_mode & 0o7777) != mode:
            written.append(name)
            before[name] = old or ""
    removed = []
    if prune:
        for name in present:
            target = os.path.join(path, name)
            if name not in want and fnmatch.fnmatch(name, PRUNED) and os.path.isfile(target):
                removed.append(name)
                before[name] = read_text(target) or ""
    return written, removed, before


def write(path, name, text, mode):
    """Write one file atomically: a mkstemp file in the same directory, then a rename (_atomic_file)."""
    _atomic_file.write_atomic(os.path.join(path, name), text.encode("utf-8"), mode)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            objects=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(file=dict(type="str", required=True), object=dict(type="raw", required=True)),
            ),
            files=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(file=dict(type="str", required=True), content=dict(type="str", required=True)),
            ),
            prune=dict(type="bool", default=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    if yaml is None:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_ERROR)
    path = module.params["path"]
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        module.fail_json(msg=f"render_files: mode {module.params['mode']!r} is not an octal mode such as 0644")
    if os.path.exists(path) and not os.path.isdir(path):
        module.fail_json(msg=f"render_files: {path} exists and is not a directory")
    try:
        want = wanted(module.params["objects"], module.params["files"])
        written, removed, before = changes(path, want, mode, module.params["prune"])
    except RenderError as err:
        module.fail_json(msg=str(err))
    except OSError as err:
        module.fail_json(msg=f"render_files: cannot read {path}: {err}")
    created = not os.path.isdir(path)
    changed = bool(written or removed or created)
    result = dict(changed=changed, written=written, removed=removed)
    if module._diff:
        headers = [(n, os.path.join(path, n), want[n]) for n in written]
        headers += [(n, "(removed)", "") for n in removed]
        result["diff"] = [
            dict(before_header=os.path.join(path, n), after_header=header, before=before[n], after=after)
            for n, header, after in headers
        ]
    if module.check_mode or not changed:
        module.exit_json(**result)
    try:
        if created:
            os.makedirs(path, mode=0o755)
        for name in written:
            write(path, name, want[name], mode)
        for name in removed:
            os.remove(os.path.join(path, name))
    except OSError as err:
        module.fail_json(msg=f"render_files: cannot write {path}: {err}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
