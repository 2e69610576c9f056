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
  - With O(trees), a subdirectory of O(path) is made a copy of directories on the same host (render mode ships a
    Helm chart verified against its keyring there, under the kustomization's chart home).
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
  trees:
    description:
      - Subdirectories of O(path) made copies of directories on this host. Every file under O(trees[].src) is
        copied to the same relative path under O(trees[].dir) (mode O(mode), directories 0755), rewriting only
        the files whose bytes or mode differ. Several entries may name the same O(trees[].dir), which then holds
        the files of all their sources, and a file two sources have is refused.
      - With O(prune), the files and emptied directories under O(trees[].dir) that no source has are removed
        (for example an earlier chart version's archive); directories O(trees) does not name are left alone.
      - A symlink in a source is refused; a symlink or non-directory inside O(trees[].dir) where a directory
        belongs is refused, a symlink where a file belongs is replaced, never written through.
    type: list
    elements: dict
    default: []
    suboptions:
      dir:
        description: The subdirectory, relative to O(path), one or more names without C(.) or C(..).
        type: str
        required: true
      src:
        description: The directory whose files it holds.
        type: path
        required: true
  prune:
    description:
      - Remove the C(*.yaml) files of O(path) that are in neither O(objects) nor O(files), and the files under
        each O(trees[].dir) that no O(trees[].src) has.
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
    description: The text of each file before and after (a file under O(trees) that is not UTF-8 text shows as a
      placeholder).
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

- name: Also ship a verified chart (unpacked, with its archive and provenance) under the chart home
  gpufabric.rollout.render_files:
    path: /srv/gitops/gpu-operator
    files:
      - file: kustomization.yaml
        content: "{{ kustomization_text }}"
    trees:
      - dir: charts
        src: "{{ verified_chart_dir }}"
"""

RETURN = r"""
written:
  description: The files this call wrote (or would write in check mode), in the order given; those under
    O(trees) by their path relative to O(path), sorted, after the others.
  returned: always
  type: list
  elements: str
  sample: [rail0-nad.yaml]
removed:
  description: The C(*.yaml) files it removed (or would remove) because the set no longer has them, then the
    files under O(trees) no source has (by their path relative to O(path)).
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


def tree_sources(trees, want):
    """{tree directory: {file path relative to it: its source file}}, every source walked; a directory that is not
    relative, a source that is not a directory or holds a symlink, and a file two sources have are refused."""
    out = {}
    for tree in trees:
        rel, src = tree["dir"], tree["src"]
        parts = rel.split("/")
        if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise RenderError(f"render_files: trees dir {rel!r} is not a directory relative to path")
        if parts[0] in want:
            raise RenderError(f"render_files: {parts[0]} is both a file and a tree's directory")
        if os.path.islink(src) or not os.path.isdir(src):
            raise RenderError(f"render_files: trees src {src} is not a directory")
        files = out.setdefault(rel, {})
        for root, dirs, names in os.walk(src):
            for name in sorted(dirs + names):
                source = os.path.join(root, name)
                if os.path.islink(source) or not (os.path.isdir(source) or os.path.isfile(source)):
                    raise RenderError(
                        f"render_files: {source} is not a plain file or directory; a tree holds only those"
                    )
            for name in names:
                source = os.path.join(root, name)
                relative = os.path.relpath(source, src)
                if relative in files:
                    raise RenderError(f"render_files: {rel}/{relative} is in two trees' sources")
                files[relative] = source
    for rel in out:
        for other in out:
            if other != rel and other.startswith(rel + "/"):
                raise RenderError(f"render_files: trees dir {other} is inside trees dir {rel}")
    return out


def _refuse_non_directories(path, rel):
    """A symlink or non-directory at `rel` (relative to `path`) or at one of its parents is refused: a tree is
    never written through a link."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        target = os.path.join(path, *parts[:depth])
        if os.path.lexists(target) and (os.path.islink(target) or not os.path.isdir(target)):
            raise RenderError(
                f"render_files: {target} exists and is not a directory; move it away, or render elsewhere"
            )


def _stale(top, keep):
    """The files (and links) under `top` not in `keep`, then the directories they leave empty, deepest first;
    relative to `top`, directories with a trailing slash."""
    files, dirs, gone = [], [], set()
    for root, subdirs, names in os.walk(top, topdown=False):
        relroot = os.path.relpath(root, top)
        left = 0
        for name in names + [d for d in subdirs if os.path.islink(os.path.join(root, d))]:
            rel = os.path.normpath(os.path.join(relroot, name))
            if rel in keep:
                left += 1
            else:
                files.append(rel)
        left += sum(
            1 for d in subdirs if not os.path.islink(os.path.join(root, d)) and os.path.join(root, d) not in gone
        )
        if left == 0 and root != top:
            gone.add(root)
            dirs.append(relroot + "/")
    dirs.sort(key=lambda d: (-d.count("/"), d))
    return sorted(files) + dirs


def tree_changes(path, sources, mode, prune):
    """(written, removed, before, data): as changes() for the trees, by path relative to `path`, and the bytes of
    each file to write."""
    written, removed, before, data = [], [], {}, {}
    for rel, files in sources.items():
        _refuse_non_directories(path, rel)
        for relative in sorted(files):
            name = f"{rel}/{relative}"
            _refuse_non_directories(path, os.path.dirname(name))
            target = os.path.join(path, name)
            if os.path.lexists(target) and not os.path.islink(target) and not os.path.isfile(target):
                raise RenderError(f"render_files: {target} exists and is not a file; move it away, or render elsewhere")
            with open(files[relative], "rb") as handle:
                new = handle.read()
            old = _atomic_file.read_bytes(target)
            if old != new or (os.lstat(target).st_mode & 0o7777) != mode:
                written.append(name)
                data[name] = new
                before[name] = old or b""
        top = os.path.join(path, rel)
        if prune and os.path.isdir(top):
            for stale in _stale(top, set(files)):
                name = f"{rel}/{stale}"
                removed.append(name)
                before[name] = (
                    b"" if stale.endswith("/") else (_atomic_file.read_bytes(os.path.join(path, name)) or b"")
                )
    return written, removed, before, data


def shown(raw):
    """A file's bytes as diff text: its text, or a placeholder for an archive or other non-text file."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"(not text: {len(raw)} bytes)\n"


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
            trees=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(dir=dict(type="str", required=True), src=dict(type="path", required=True)),
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
        sources = tree_sources(module.params["trees"], want)
        tree_written, tree_removed, tree_before, tree_data = tree_changes(path, sources, mode, module.params["prune"])
    except RenderError as err:
        module.fail_json(msg=str(err))
    except OSError as err:
        module.fail_json(msg=f"render_files: cannot read {path}: {err}")
    created = not os.path.isdir(path)
    changed = bool(written or removed or tree_written or tree_removed or created)
    result = dict(changed=changed, written=written + tree_written, removed=removed + tree_removed)
    if module._diff:
        headers = [(n, os.path.join(path, n), want[n]) for n in written]
        headers += [(n, "(removed)", "") for n in removed]
        headers += [(n, os.path.join(path, n), shown(tree_data[n])) for n in tree_written]
        headers += [(n, "(removed)", "") for n in tree_removed]
        before.update((n, shown(raw)) for n, raw in tree_before.items())
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
        for name in tree_written:
            os.makedirs(os.path.dirname(os.path.join(path, name)), mode=0o755, exist_ok=True)
            _atomic_file.write_atomic(os.path.join(path, name), tree_data[name], mode)
        for name in tree_removed:
            target = os.path.join(path, name)
            if name.endswith("/"):
                os.rmdir(target)
            else:
                os.remove(target)
    except OSError as err:
        module.fail_json(msg=f"render_files: cannot write {path}: {err}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
