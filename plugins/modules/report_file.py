#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_file
short_description: Write a report of the run to a file on the controller, without running a module
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin). It writes O(content) to O(dest) inside Ansible's own
    worker process. No connection is opened and no module process is started.
  - The host layer writes its rollout report before each role of every batch (playbooks/tasks/report_progress.yml).
    With M(ansible.builtin.template) delegated to localhost, each write started a module process on the
    controller. That cost more than a second of wall time per write on a 2-CPU controller, several times in every batch.
  - The file is replaced in one step (a new file in the same folder, then a rename). A reader never sees
    half a report, and a symbolic link at O(dest) is replaced, not followed.
  - Nothing is written when the file already holds O(content) with O(mode).
  - In check mode nothing is written and the result says whether the file would change. Set C(check_mode) to
    V(false) on the task to write the report of a check run.
options:
  content:
    description: The text of the report.
    type: str
    required: true
  dest:
    description: The file to write, on the controller. Its folder must exist.
    type: path
    required: true
  mode:
    description: The file's permissions, as an octal string.
    type: str
    default: "0644"
author:
  - gpufabric.rollout contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Write the rollout report as the run stands
  gpufabric.rollout.report_file:
    content: "{{ lookup('ansible.builtin.template', 'rollout-report.txt.j2') }}"
    dest: "{{ playbook_dir }}/rollout-report.txt"
  run_once: true
  check_mode: false
"""

RETURN = r"""
dest:
  description: The file written, as given.
  returned: always
  type: str
size:
  description: The length of O(content) in bytes, UTF-8 encoded.
  returned: always
  type: int
"""
