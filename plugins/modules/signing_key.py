#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: signing_key
short_description: Install a package repository's signing key only when its fingerprint is pinned
version_added: 0.1.0
description:
  - Downloads the OpenPGP public key of a package repository, reads the fingerprint of every primary
    key in it, and writes it to O(dest) (an apt C(signed-by) keyring) only when every one of them is
    in O(fingerprints). Otherwise it fails and changes nothing, naming the fingerprints it found.
  - The key is read in memory and written through a temporary file in the directory of O(dest), then
    moved into place; nothing is kept at a fixed shared path. A key already installed with the same
    content is not rewritten.
  - Check mode downloads and checks the key too, so a run in check mode fails as the real run would.
options:
  url:
    description: Where the key is served; C(https://), C(http://) and C(file://) URLs work (the pin, not the
      transport, makes the key trusted).
    type: str
    required: true
  dest:
    description: Where to write the key, as downloaded (armored keys need a C(.asc) name for apt).
    type: path
    required: true
  fingerprints:
    description:
      - The fingerprints trusted for this repository (40 hex digits; spaces and lower case allowed, as
        C(gpg --fingerprint) prints them).
      - Empty means the collection's pin for O(known), and fails when O(known) names none.
    type: list
    elements: str
    default: []
  known:
    description: The repository whose published key the collection pins when O(fingerprints) is empty
      (C(cuda), NVIDIA's CUDA repository key C(3bf863cc)).
    type: str
    choices: ["", cuda]
    default: ""
  variable:
    description: The inventory variable that holds O(fingerprints), named in the errors.
    type: str
    required: true
  validate_certs:
    description: Verify TLS certificates.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the download.
    type: int
    default: 30
  mode:
    description: The mode of O(dest), in octal.
    type: str
    default: "0644"
  owner:
    description: The owner of O(dest).
    type: str
    default: root
  group:
    description: The group of O(dest).
    type: str
    default: root
attributes:
  check_mode:
    description: Downloads and checks the key and reports whether it would write it; writes nothing.
    support: full
  diff_mode:
    description: Reports no diff (a key file is binary or armored data).
    support: none
  platform:
    description: Any POSIX host.
    platforms: posix
    support: full
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Install the CUDA repository key, pinned
  gpufabric.rollout.signing_key:
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    dest: /etc/apt/keyrings/gpufabric-cuda.asc
    known: cuda
    variable: gpudirect_storage_repo_key_fingerprints
"""

RETURN = r"""
fingerprints:
  description: The fingerprints of the primary keys in the downloaded file (all of them pinned).
  returned: success
  type: list
  elements: str
  sample: ["EB693B3035CD5710E231E123A4B469963BF863CC"]
pinned:
  description: The fingerprints the key was checked against.
  returned: success
  type: list
  elements: str
"""

import os
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import open_url

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import atomic_file as _atomic_file
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import signing_key as _key


def download(params):
    if urlsplit(params["url"]).scheme not in ("https", "http", "file"):
        raise _key.SigningKeyError(f"{params['url']} is not an https://, http:// or file:// URL")
    response = open_url(params["url"], validate_certs=params["validate_certs"], timeout=params["timeout"])
    data = response.read(_key.MAX_KEY_BYTES + 1)
    if len(data) > _key.MAX_KEY_BYTES:
        raise _key.SigningKeyError(f"{params['url']} serves more than a public key file holds")
    return data


def write(module, dest, data):
    """Write data to dest (read without following a symlink there, written through a temporary file
    beside it: shared.atomic_file); True when the content changed."""
    if _atomic_file.read_bytes(dest) == data:
        return False
    if not module.check_mode:
        _atomic_file.write_atomic(dest, data, int(module.params["mode"], 8))
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            dest=dict(type="path", required=True),
            fingerprints=dict(type="list", elements="str", default=[]),
            known=dict(type="str", choices=["", "cuda"], default=""),
            variable=dict(type="str", required=True),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
            mode=dict(type="str", default="0644"),
            owner=dict(type="str", default="root"),
            group=dict(type="str", default="root"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    variable = params["variable"]
    try:
        pinned = _key.pins(params["fingerprints"], params["known"])
    except _key.SigningKeyError as exc:
        module.fail_json(msg=f"{variable}: {exc}")
    if not pinned:
        module.fail_json(msg=f"{variable}: no fingerprint pinned for the key at {params['url']}")
    try:
        data = download(params)
        found, bad = _key.unpinned(data, pinned)
    except _key.SigningKeyError as exc:
        module.fail_json(msg=f"the signing key at {params['url']}: {exc}; nothing was installed")
    except Exception as exc:  # open_url raises URLError, HTTPError, OSError, ssl errors
        module.fail_json(msg=f"could not download the signing key {params['url']}: {to_native(exc)}")
    if bad:
        module.fail_json(
            msg=(
                f"the signing key at {params['url']} has the fingerprint {', '.join(bad)}, which {variable} does "
                f"not pin ({', '.join(pinned)}); nothing was installed. If the vendor rotated its key, check the "
                f"new fingerprint with the vendor and add it to {variable}"
            ),
            fingerprints=found,
            pinned=pinned,
        )
    changed = write(module, params["dest"], data)
    file_args = module.load_file_common_arguments(
        dict(path=params["dest"], owner=params["owner"], group=params["group"], mode=params["mode"])
    )
    if os.path.exists(params["dest"]):
        changed = module.set_fs_attributes_if_different(file_args, changed)
    module.exit_json(changed=changed, fingerprints=found, pinned=pinned)


if __name__ == "__main__":
    main()
