# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of how a run goes: validation (sizes, fractions, rail counts), batches and failure
thresholds, the instance label, upgrades.
Called from ``intent.rules`` (NODE_RULES, CLUSTER_RULES, UPGRADE_RULES); each takes the normalised
values and appends problems.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import (
    Problems,
    dns_label,
    in_range,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import image_ref as _image_ref
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import k8s_labels as _k8s_labels

VALIDATE_FRACTIONS = (
    "validate_rdma_fraction",
    "validate_nccl_efficiency",
    "validate_nccl_fraction",
    "validate_gds_fraction",
    "validate_pcie_fraction",
    "validate_hbm_fraction",
    "validate_nvlink_fraction",
)
SIZE_RE = re.compile(r"^([0-9]{1,12})([KMG]?)$")
MAX_RAILS = 64


def size_bytes(problems: Problems, path: str, value: Any) -> Optional[int]:
    """A size like 1M or 8G (K, M, G: powers of 1024, as nccl-tests and gdsio read them)."""
    match = SIZE_RE.fullmatch(str(value)) if value is not None else None
    if not match or int(match.group(1)) == 0:
        problems.append(
            f"{path}: {show(value)} is not a size like 512K, 1M or 8G (a positive number, optional K, M, G)"
        )
        return None
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]


def validate_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "validate_rdma_fraction" not in values:
        return
    for name in VALIDATE_FRACTIONS:
        value = values.get(name)
        if value is not None and not 0 < value <= 1:
            # Each gate is a fraction of a ceiling (line rate, datasheet, raw link): above 1 it can never pass.
            problems.append(
                f"{name}: {show(value)} is out of range; allowed: above 0 and at most 1 "
                "(a fraction of the ceiling the gate measures against; above 1 the gate can never pass)"
            )
    in_range(problems, "validate_reuse_hours", values.get("validate_reuse_hours"), 0, 8760)
    in_range(problems, "validate_rdma_size", values.get("validate_rdma_size"), 1, 1 << 31)
    in_range(problems, "validate_rdma_duration", values.get("validate_rdma_duration"), 1, 3600)
    in_range(problems, "validate_rdma_timeout", values.get("validate_rdma_timeout"), 1, 86400)
    # Rail r uses base + 2r and base + 2r + 1 (GPU memory): every rail's ports must be valid.
    in_range(problems, "validate_rdma_base_port", values.get("validate_rdma_base_port"), 1024, 65535 - 2 * MAX_RAILS)
    in_range(problems, "validate_gds_gpu", values.get("validate_gds_gpu"), 0, 63)
    in_range(problems, "validate_gds_threads", values.get("validate_gds_threads"), 1, 1024)
    in_range(problems, "validate_gds_duration", values.get("validate_gds_duration"), 1, 3600)
    for name in ("validate_gds_file_size", "validate_gds_io_size"):
        size_bytes(problems, name, values.get(name))
    subdir = values.get("validate_gds_subdir")
    if not (isinstance(subdir, str) and subdir not in ("", ".", "..") and "/" not in subdir):
        problems.append(f"validate_gds_subdir: {show(subdir)} must be one directory name (no '/', not '.' or '..')")
    for index, item in enumerate(values.get("validate_gds_filesystems") or []):
        if not isinstance(item, Mapping):
            continue
        path = item.get("path")
        if path is not None and not str(path).startswith("/"):
            problems.append(f"validate_gds_filesystems[{index}].path: {show(path)} is not an absolute path")
        expected = item.get("expected_gbps")
        if expected is not None and not expected > 0:
            problems.append(f"validate_gds_filesystems[{index}].expected_gbps: {show(expected)} must be above 0")
    low = size_bytes(problems, "validate_nccl_min_bytes", values.get("validate_nccl_min_bytes"))
    high = size_bytes(problems, "validate_nccl_max_bytes", values.get("validate_nccl_max_bytes"))
    if low is not None and high is not None and high < low:
        problems.append(
            f"validate_nccl_max_bytes: {show(values.get('validate_nccl_max_bytes'))} is below validate_nccl_min_bytes "
            f"{show(values.get('validate_nccl_min_bytes'))}"
        )
    in_range(problems, "validate_nccl_iters", values.get("validate_nccl_iters"), 1, 10000)
    in_range(problems, "validate_nccl_timeout", values.get("validate_nccl_timeout"), 60, 86400)
    in_range(problems, "validate_nccl_ssh_port", values.get("validate_nccl_ssh_port"), 1024, 65535)
    image_problem = _image_ref.problem("validate_nccl_image", values.get("validate_nccl_image"))
    if image_problem:
        problems.append(image_problem)
    binary = values.get("validate_nccl_binary")
    if not (isinstance(binary, str) and binary.startswith("/")):
        problems.append(f"validate_nccl_binary: {show(binary)} must be an absolute path in the image")
    # The NCCL Jobs' own namespace (the Jobs, their Services and Secrets: proof/jobs.py)
    dns_label(problems, "validate_namespace", values.get("validate_namespace"))


def batch_size(problems: Problems, path: str, value: Any, of_what: str) -> None:
    """A play's serial: a number of nodes (1 or more) or a percentage (1%-100%)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*(%?)\s*", str(value)) if not isinstance(value, bool) else None
    if not match or int(match.group(1)) < 1 or (match.group(2) and int(match.group(1)) > 100):
        problems.append(
            f"{path}: {show(value)} is not a number of nodes (1 or more) or a percentage (1%-100%) of {of_what}"
        )


def batch_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """The host layer's batches (playbooks/hosts.yml serial) and its failure threshold."""
    if "gpufabric_batch_size" in values:
        batch_size(problems, "gpufabric_batch_size", values["gpufabric_batch_size"], "the GPU nodes in the run")
    if values.get("gpufabric_max_fail_percentage") is not None:
        in_range(problems, "gpufabric_max_fail_percentage", values["gpufabric_max_fail_percentage"], 0, 100)


def instance_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """gpufabric_instance: the label value every owned object carries (pruning selects on it)."""
    problem = _k8s_labels.instance_problem(values.get("gpufabric_instance"))
    if problem:
        problems.append(f"{problem}; set gpufabric_instance in group_vars/all")


def upgrade_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "gpufabric_upgrade_serial" in values:
        batch_size(problems, "gpufabric_upgrade_serial", values["gpufabric_upgrade_serial"], "the nodes to upgrade")
    for name, low, high in (
        ("gpufabric_upgrade_max_fail_percentage", 0, 100),
        ("gpufabric_upgrade_drain_timeout", 1, 86400),
        ("gpufabric_upgrade_drain_retry_delay", 1, 3600),
        ("gpufabric_upgrade_drain_grace_period", -1, 86400),
        ("gpufabric_upgrade_reboot_timeout", 60, 86400),
        ("gpufabric_upgrade_allocation_timeout", 1, 86400),
    ):
        if values.get(name) is not None:
            in_range(problems, name, values[name], low, high)
    if values.get("gpufabric_upgrade_drain_grace_period") == 0:
        problems.append(
            "gpufabric_upgrade_drain_grace_period: 0 is not allowed; -1 keeps the Pods' own grace period, or 1-86400"
        )
