#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: package_holds
short_description: Hold (or release) many installed dpkg packages in one call
version_added: 0.1.0
description:
  - Reads the dpkg selection of every package in O(name) with one C(dpkg-query) call and sets
    O(selection) on the installed ones that do not have it yet with one C(dpkg --set-selections)
    call. Packages that are not installed are left alone and listed in RV(not_installed).
  - M(ansible.builtin.dpkg_selections) sets one package per call; a role that holds tens of
    packages would make tens of calls on every run, also when every selection is already right.
  - The selection is the first word of dpkg's Status field ("WANT ERROR STATUS", deb-control(5));
    a multi-arch package listed once per architecture counts as set only when every one is.
options:
  name:
    description: The packages.
    type: list
    elements: str
    required: true
  selection:
    description: C(hold) keeps apt from upgrading or removing them; C(install) releases them.
    type: str
    choices: [hold, install]
    default: hold
attributes:
  check_mode:
    description: Reads the selections and reports what it would set; sets nothing.
    support: full
  diff_mode:
    description: The selections of the installed packages before and after, one "name selection" line each.
    support: full
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Hold the installed DOCA-OFED packages at the pinned version
  gpufabric.rollout.package_holds:
    name: [doca-ofed, mlnx-ofed-kernel-dkms, rdma-core]
    selection: hold
"""

RETURN = r"""
changed_packages:
  description: The installed packages whose selection this call set (or would set in check mode).
  returned: always
  type: list
  elements: str
  sample: [doca-ofed]
not_installed:
  description: The packages of O(name) that dpkg does not list as installed.
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

QUERY_FORMAT = "${Package} ${Status}\\n"


def parse_query(stdout):
    """{name: want} of the installed packages in ``dpkg-query -W -f='${Package} ${Status}\\n'`` output.

    A package listed once per architecture with different selections reads as "mixed"; one whose
    status is not "installed" (config-files, half-installed, not-installed) is left out.
    """
    wants = {}
    for line in (stdout or "").splitlines():
        fields = line.split()
        if len(fields) != 4 or fields[3] != "installed":
            continue
        name, want = fields[0], fields[1]
        wants[name] = want if wants.get(name, want) == want else "mixed"
    return wants


def plan_changes(names, wants, selection):
    """(to set, not installed) for the wanted ``selection`` of ``names``, in the order given."""
    unique = list(dict.fromkeys(names))
    return (
        [name for name in unique if name in wants and wants[name] != selection],
        [name for name in unique if name not in wants],
    )


def selections_text(names, wants):
    """dpkg --set-selections input: a "name selection" line for each of `names` that `wants` has."""
    return "".join(f"{name} {wants[name]}\n" for name in names if name in wants)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="list", elements="str", required=True),
            selection=dict(type="str", choices=["hold", "install"], default="hold"),
        ),
        supports_check_mode=True,
    )
    names, selection = module.params["name"], module.params["selection"]
    if not names:
        module.exit_json(changed=False, changed_packages=[], not_installed=[])
    # dpkg-query exits 1 when a name is unknown and still prints the known ones.
    rc, out, err = module.run_command(["dpkg-query", "-W", "-f=" + QUERY_FORMAT, *names], check_rc=False)
    if rc not in (0, 1):
        module.fail_json(msg=f"dpkg-query failed (exit {rc}): {err.strip()}", rc=rc)
    wants = parse_query(out)
    to_set, not_installed = plan_changes(names, wants, selection)
    result = dict(changed=bool(to_set), changed_packages=to_set, not_installed=not_installed)
    after = dict(wants, **{name: selection for name in to_set})
    if module._diff:
        result["diff"] = dict(before=selections_text(names, wants), after=selections_text(names, after))
    if to_set and not module.check_mode:
        data = selections_text(to_set, after)
        rc, out, err = module.run_command(["dpkg", "--set-selections"], data=data, binary_data=True, check_rc=False)
        if rc != 0:
            module.fail_json(msg=f"dpkg --set-selections failed (exit {rc}): {err.strip()}", rc=rc, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
