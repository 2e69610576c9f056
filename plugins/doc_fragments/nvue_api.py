# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that talk to a switch's NVUE REST API."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  switch:
    description: The switch's name as the plan has it, named in every result and error.
    type: str
    required: true
  address:
    description:
      - Address of the switch's NVUE REST API, C(HOST) or C(HOST:PORT) (C([IPv6]:PORT)); the port defaults to
        8765, NVUE's.
    type: str
    required: true
  user:
    description: NVUE user of the API (basic authentication).
    type: str
    required: true
  password:
    description: Password of O(user).
    type: str
    required: true
  ca_path:
    description:
      - PEM file of the CA that signed the switch's API certificate; without it the system's trusted CAs are used.
    type: path
  validate_certs:
    description: Verify the switch's TLS certificate. Turning it off sends the password to whoever answers.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for each request.
    type: int
    default: 30
attributes:
  platform:
    platforms: posix
    support: full
    description: Any host that reaches the switch's API (the controller, in the collection's playbooks).
"""
