# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of outside tools' output (sysfs, PCI config space, QoS tools, gdscheck, perftest, nccl-tests...)."""
