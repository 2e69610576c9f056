# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning: checked intent + discovered facts -> what every role does (node, cluster, storage, GPU, NCCL...)."""
