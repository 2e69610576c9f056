#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: host_files
short_description: Make a set of directories and whole files on a host exactly as given, in one call
version_added: 0.1.0
description:
  - Creates each directory of O(directories) and writes each file of O(files) with the text given,
    and sets the owner, group and mode of each. Only what differs is changed. A file whose text is
    already as given is not rewritten (its mode and owner are still corrected).
  - One call instead of a M(ansible.builtin.file), M(ansible.builtin.copy) or
    M(ansible.builtin.template) task per path. A role's files are rendered on the controller
    (C(lookup('ansible.builtin.template', ...)), C(lookup('ansible.builtin.file', ...))) and given
    here as text. On a run that changes nothing this is one module call per host instead of ten.
  - Files are written atomically (a temporary file in the same directory, then Ansible's atomic move).
  - Every path must be absolute, and given once. A file's directory must exist or be one of
    O(directories); nothing else is created.
options:
  directories:
    description: Directories to create (with their missing parents), in the order given.
    type: list
    elements: path
    default: []
  files:
    description: Files written with the text given.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The absolute path of the file.
        type: path
        required: true
      content:
        description: The whole text of the file.
        type: str
        required: true
      mode:
        description: The mode of the file, in octal.
        type: str
        default: "0644"
  directory_mode:
    description: The mode of each directory of O(directories), in octal.
    type: str
    default: "0755"
  owner:
    description: The owner of every directory and file.
    type: str
    default: root
  group:
    description: The group of every directory and file.
    type: str
    default: root
attributes:
  check_mode:
    description: Compares and reports what it would create, write and correct; changes nothing.
    support: full
  diff_mode:
    description: The text of each file before and after; the mode or owner of each path corrected.
    support: full
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Install the boot service and its configuration
  gpufabric.rollout.host_files:
    directories: [/etc/gpufabric, /etc/systemd/system/openibd.service.d]
    files:
      - path: /etc/gpufabric/plan.json
        content: "{{ plan | to_nice_json(sort_keys=true) }}\n"
      - path: /etc/systemd/system/gpufabric-roce.service
        content: "{{ lookup('ansible.builtin.template', 'gpufabric-roce.service.j2') }}"
  register: installed

- name: Reload systemd when a unit changed
  ansible.builtin.systemd_service:
    daemon_reload: true
  when: "'/etc/systemd/system/gpufabric-roce.service' in installed.changed_paths"
"""

RETURN = r"""
changed_paths:
  description: The directories and files this call created, wrote or corrected (or would, in check mode), in the
    order given (directories first).
  returned: always
  type: list
  elements: str
  sample: [/etc/gpufabric, /etc/gpufabric/plan.json]
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


class HostFilesError(Exception):
    pass


def octal(value, name):
    try:
        return int(str(value), 8)
    except ValueError:
        raise HostFilesError(f"host_files: {name} {value!r} is not an octal mode such as 0644") from None


def checked(directories, files):
    """The directories and files with their modes as numbers. Everything that cannot be done is refused here,
    before anything changes: a relative or repeated path, a file without a directory, a directory that is a file,
    a file that is a directory, a mode that is not octal."""
    seen = set()
    for path in list(directories) + [f["path"] for f in files]:
        if not os.path.isabs(path):
            raise HostFilesError(f"host_files: {path!r} is not an absolute path")
        norm = os.path.normpath(path)
        if norm in seen:
            raise HostFilesError(f"host_files: {norm} is given twice")
        seen.add(norm)
    dirs = {os.path.normpath(d) for d in directories}
    for path in sorted(dirs):
        if os.path.lexists(path) and not os.path.isdir(path):
            raise HostFilesError(f"host_files: {path} exists and is not a directory")
        above = os.path.dirname(path)
        while not os.path.lexists(above):
            above = os.path.dirname(above)
        if not os.path.isdir(above):
            raise HostFilesError(f"host_files: {path} cannot be made: {above} is not a directory")
    out = []
    for item in files:
        path = os.path.normpath(item["path"])
        parent = os.path.dirname(path)
        if not os.path.isdir(parent) and parent not in dirs:
            raise HostFilesError(f"host_files: the directory of {path} does not exist; add {parent} to directories")
        if os.path.isdir(path):
            raise HostFilesError(f"host_files: {path} is a directory, not a file")
        out.append((path, item["content"], octal(item["mode"], f"the mode of {path}")))
    return [os.path.normpath(d) for d in directories], out


def read_bytes(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def as_text(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "(binary content)\n"


def attributes(module, path, mode, diffs):
    """Correct owner, group and mode of an existing path (check mode: report only); True when any differs."""
    owner, group = module.params["owner"], module.params["group"]
    args = module.load_file_common_arguments({"path": path, "mode": mode, "owner": owner, "group": group})
    diff = {"before": {"path": path}, "after": {"path": path}}
    changed = module.set_fs_attributes_if_different(args, False, diff)
    if changed and module._diff:
        diffs.append(diff)
    return changed


def write(module, path, data):
    """Write a temporary file beside ``path`` and move it in place with Ansible's atomic_move (as
    ansible.builtin.copy does: it keeps the SELinux context and the attributes of a file it replaces)."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        os.unlink(temporary)
        raise
    module.atomic_move(temporary, path)


def converge(module, directories, dir_mode, files):
    """(changed paths, diffs): make the directories and files as given (check mode: find what differs)."""
    changed, diffs = [], []
    for path in directories:
        if not os.path.isdir(path):
            changed.append(path)
            if module._diff:
                diffs.append(
                    {"before": {"path": path, "state": "absent"}, "after": {"path": path, "state": "directory"}}
                )
            if module.check_mode:
                continue
            os.makedirs(path, mode=dir_mode)
            attributes(module, path, dir_mode, [])
        elif attributes(module, path, dir_mode, diffs):
            changed.append(path)
    for path, content, mode in files:
        want = content.encode("utf-8")
        have = read_bytes(path)
        if have != want:
            changed.append(path)
            if module._diff:
                diffs.append(
                    {
                        "before_header": path if have is not None else f"{path} (absent)",
                        "after_header": path,
                        "before": "" if have is None else as_text(have),
                        "after": content,
                    }
                )
            if module.check_mode:
                continue
            write(module, path, want)
            attributes(module, path, mode, [])
        elif attributes(module, path, mode, diffs):
            changed.append(path)
    return changed, diffs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="path", default=[]),
            files=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    path=dict(type="path", required=True),
                    content=dict(type="str", required=True),
                    mode=dict(type="str", default="0644"),
                ),
            ),
            directory_mode=dict(type="str", default="0755"),
            owner=dict(type="str", default="root"),
            group=dict(type="str", default="root"),
        ),
        supports_check_mode=True,
    )
    try:
        dir_mode = octal(module.params["directory_mode"], "directory_mode")
        directories, files = checked(module.params["directories"], module.params["files"])
        changed, diffs = converge(module, directories, dir_mode, files)
    except HostFilesError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg=f"host_files: {exc}")
    result = {"changed": bool(changed), "changed_paths": changed}
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
