#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: cufile_config
short_description: Set keys in cufile.json (GPUDirect Storage) in place, keeping comments and layout
version_added: "0.1.0"
description:
  - Edits C(/etc/cufile.json), the cuFile configuration, which is JSON with C(//) comments. Only the values of the
    requested keys change; comments, blank lines, indentation, key order and keys this module does not know are
    kept. When nothing is to change the file is not written at all.
  - Missing keys are added after their last sibling with the siblings' indentation; missing sections are created.
  - Dicts merge into the file's objects key by key; lists and scalars replace the value.
author:
  - gpufabric.rollout contributors (@gpufabric)
options:
  path:
    description: The file to edit.
    type: path
    default: /etc/cufile.json
  compat_mode:
    description:
      - Let cuFile fall back to POSIX I/O when GDS cannot be used. Sets C(properties.allow_compat_mode), or
        C(properties.use_compat_mode) in files of older releases that use that name.
    type: bool
  force_compat_mode:
    description: Always use POSIX I/O (C(properties.force_compat_mode)).
    type: bool
  rdma_dev_addr_list:
    description: Client-side RDMA NIC IPv4/IPv6 addresses (C(properties.rdma_dev_addr_list)).
    type: list
    elements: str
  use_pci_p2pdma:
    description: Use the kernel's PCI P2PDMA instead of nvidia-fs (NVMe only) (C(properties.use_pci_p2pdma)).
    type: bool
  properties:
    description: Other C(properties) keys to set, as a dict.
    type: dict
    default: {}
  filesystems:
    description:
      - Per-filesystem sections under C(fs); each is a dict of keys to set (C(rdma_dev_addr_list), C(mount_table) ...).
    type: dict
    default: {}
    suboptions:
      lustre: {description: Keys for C(fs.lustre)., type: dict}
      nfs: {description: Keys for C(fs.nfs)., type: dict}
      gpfs: {description: Keys for C(fs.gpfs)., type: dict}
      weka: {description: Keys for C(fs.weka)., type: dict}
      beegfs: {description: Keys for C(fs.beegfs)., type: dict}
  settings:
    description: 'Any other keys, as a nested dict from the top of the document (e.g. C({logging: {level: WARN}})).'
    type: dict
    default: {}
  create:
    description: Create the file (as C({})) when it does not exist; otherwise a missing file is an error.
    type: bool
    default: false
  backup:
    description: Keep a timestamped copy of the old file when it changes.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Computes the new text and reports the change without writing.
  diff_mode:
    support: full
    description: Returns the old and new text.
  platform:
    support: full
    platforms: posix
    description: Any host with GDS user space (libcufile) installed.
"""

EXAMPLES = r"""
- name: Configure cuFile for NFS over RDMA on the rail NICs, falling back to POSIX I/O
  gpufabric.rollout.cufile_config:
    compat_mode: true
    rdma_dev_addr_list: ["10.0.0.11", "10.0.1.11"]
    filesystems:
      nfs:
        rdma_dev_addr_list: ["10.0.0.11", "10.0.1.11"]
"""

RETURN = r"""
changed_keys:
  description: Dotted paths of the keys whose values changed or were added.
  returned: always
  type: list
  elements: str
  sample: ["properties.rdma_dev_addr_list", "fs.nfs.rdma_dev_addr_list"]
config:
  description: The resulting configuration as data (comments dropped).
  returned: always
  type: dict
backup_file:
  description: Path of the backup, when one was made.
  returned: when backup is true and the file changed
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import atomic_file as _atomic_file
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

_FS_SPEC = {name: {"type": "dict"} for name in _cufile.FILESYSTEMS}


def decode(raw: bytes, path: str) -> str:
    """The file's text; ParseError naming the line of the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = raw.count(b"\n", 0, exc.start) + 1
        line = raw.split(b"\n")[lineno - 1].decode("utf-8", "replace")
        raise ParseError(
            f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not UTF-8", line=line, lineno=lineno, source=path
        ) from None


def run(module: AnsibleModule) -> dict:
    params = module.params
    path = params["path"]
    if os.path.exists(path):
        with open(path, "rb") as handle:
            raw = handle.read()
        before = decode(raw, path)
    elif params["create"]:
        raw = None
        before = "{\n}\n"
    else:
        raise FileNotFoundError(f"{path} does not exist (install the GDS packages, or set create: true)")
    try:
        data = _cufile.parse(before)
    except ParseError as exc:
        raise exc.within(path) from None
    desired = _cufile.build_desired(
        data,
        compat_mode=params["compat_mode"],
        force_compat_mode=params["force_compat_mode"],
        rdma_dev_addr_list=params["rdma_dev_addr_list"],
        use_pci_p2pdma=params["use_pci_p2pdma"],
        filesystems=params["filesystems"],
        properties=params["properties"],
        settings=params["settings"],
    )
    after, changed_keys = _cufile.apply_settings(before, desired)
    changed = bool(changed_keys) or raw is None
    result = {"changed": changed, "changed_keys": changed_keys, "config": _cufile.parse(after)}
    if module._diff:
        result["diff"] = {
            "before": before if raw is not None else "",
            "after": after,
            "before_header": path,
            "after_header": path,
        }
    if changed and not module.check_mode:
        if raw is not None and params["backup"]:
            result["backup_file"] = module.backup_local(path)
        # A mkstemp name beside the file (never one planted at a name that could be guessed), then
        # atomic_move, which keeps the existing file's owner, mode and SELinux context.
        fd, tmp = _atomic_file.temporary_beside(path)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_bytes(after))
            module.atomic_move(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/etc/cufile.json"},
            "compat_mode": {"type": "bool"},
            "force_compat_mode": {"type": "bool"},
            "rdma_dev_addr_list": {"type": "list", "elements": "str"},
            "use_pci_p2pdma": {"type": "bool"},
            "properties": {"type": "dict", "default": {}},
            "filesystems": {"type": "dict", "default": {}, "options": _FS_SPEC},
            "settings": {"type": "dict", "default": {}},
            "create": {"type": "bool", "default": False},
            "backup": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except (OSError, ValueError) as exc:
        module.fail_json(msg=f"cufile_config: {exc}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
