# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NIC drivers: what is driver-specific about a NIC (its ids, limits, QoS tools and sysfs), behind one interface."""
