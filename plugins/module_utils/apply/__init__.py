# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply: the engines that change a node or the cluster (RoCE QoS, ACS, cufile.json, publish, access, drain)."""
