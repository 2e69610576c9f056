#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: doca_repo_info
short_description: List the packages and versions an apt or dnf repository carries (DOCA, the GPU driver)
version_added: 0.1.0
description:
  - Reads the package index of one repository directory, the way apt or dnf would, without
    configuring anything on the host. The plan uses it to refuse a DOCA-OFED or GPU driver version
    the repository does not carry before anything changes.
  - apt repositories are read from C(Packages.gz) or C(Packages); dnf repositories from
    C(repodata/repomd.xml) and the primary metadata it names (plain or gzip).
options:
  url:
    description: The repository directory, for example C(https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/).
      C(http://), C(https://) and C(file://) URLs work.
    type: str
    required: true
  format:
    description: Repository format.
    type: str
    choices: [apt, dnf]
    default: apt
  validate_certs:
    description: Verify TLS certificates.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for each download.
    type: int
    default: 30
  variable:
    description: The variable that points at the repository (a mirror on an air-gapped site), named in the error
      when the index cannot be read or there is none.
    type: str
    default: doca_ofed_repo_base_url
  off_setting:
    description: The setting that turns off the layer that needs the repository, named in the same errors.
    type: str
    default: "gpufabric_doca_ofed_enabled: false"
extends_documentation_fragment:
  - gpufabric.rollout.read_only
attributes:
  platform:
    platforms: posix
    support: full
    description: Any host that can reach the repository.
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the DOCA repository index
  gpufabric.rollout.doca_repo_info:
    url: https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/
  register: doca_index
"""

RETURN = r"""
packages:
  description: Package name to its versions, oldest first.
  returned: success
  type: dict
  sample: {"doca-ofed": ["2.9.1-0.1.4", "2.9.2-0.1.8"]}
depends:
  description: For apt repositories, the C(Depends) field of each C(doca-*) metapackage version
    (from which the exact component versions of a profile are read); empty for dnf.
  returned: success
  type: dict
  sample: {"doca-ofed": {"2.9.1-0.1.4": "mlnx-ofed-kernel-dkms (= 24.10.OFED.24.10.1.1.4.1-1), ..."}}
url:
  description: The index that was read.
  returned: success
  type: str
  sample: https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/Packages.gz
"""

import gzip
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

DEFAULT_VARIABLE = "doca_ofed_repo_base_url"
DEFAULT_OFF = "gpufabric_doca_ofed_enabled: false"


def _fetch(url, params):
    """Bytes of one URL, or None when it does not exist (HTTP 404, or a missing file:// path)."""
    try:
        return open_url(url, validate_certs=params["validate_certs"], timeout=params["timeout"]).read()
    except HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    except URLError as exc:
        if isinstance(exc.reason, FileNotFoundError) or "No such file" in str(exc.reason):
            return None
        raise
    except FileNotFoundError:
        return None


def _maybe_gunzip(data, name):
    if name.endswith(".gz"):
        return gzip.decompress(data)
    return data


def read_index(params):
    base = params["url"].rstrip("/") + "/"
    if params["format"] == "apt":
        for name in ("Packages.gz", "Packages"):
            data = _fetch(base + name, params)
            if data is not None:
                text = _maybe_gunzip(data, name).decode("utf-8", "replace")
                try:
                    return base + name, _doca_index.parse_packages_index(text), _doca_index.parse_packages_depends(text)
                except ParseError as exc:
                    raise exc.within(base + name) from None
        raise _doca.DocaError(
            f"{params['variable']}: no Packages index at {base} (wrong release, OS or arch token?)" + hint(params)
        )
    repomd = _fetch(base + "repodata/repomd.xml", params)
    if repomd is None:
        raise _doca.DocaError(f"{params['variable']}: no repodata/repomd.xml at {base}" + hint(params))
    try:
        location = _doca_index.primary_location(repomd)
    except ParseError as exc:
        raise exc.within(base + "repodata/repomd.xml") from None
    if location.endswith((".zst", ".xz", ".bz2")):
        raise _doca.DocaError(f"{base}: primary metadata compression not supported here ({location})")
    data = _fetch(base + location, params)
    if data is None:
        raise _doca.DocaError(f"{base}: repomd.xml names {location}, which is missing")
    try:
        return base + location, _doca_index.parse_primary_xml(_maybe_gunzip(data, location)), {}
    except ParseError as exc:
        raise exc.within(base + location) from None


def hint(params):
    """What an air-gapped site can do: point the variable at a mirror, or turn the layer off."""
    return "; point {} at a reachable mirror of the repository (an air-gapped site), or set {}".format(
        params.get("variable") or DEFAULT_VARIABLE, params.get("off_setting") or DEFAULT_OFF
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            format=dict(type="str", choices=["apt", "dnf"], default="apt"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
            variable=dict(type="str", default=DEFAULT_VARIABLE),
            off_setting=dict(type="str", default=DEFAULT_OFF),
        ),
        supports_check_mode=True,
    )
    result = dict(changed=False)
    error = None
    try:
        result["url"], result["packages"], result["depends"] = read_index(module.params)
    except (_doca.DocaError, ParseError) as exc:
        error = str(exc)
    except Exception as exc:  # network and I/O errors become one clear failure
        error = "cannot read the repository index under {}: {}".format(module.params["url"], exc)
        error += hint(module.params)
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
