# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of the software the collection installs: DOCA-OFED, signing-key pins, the NCCL config, the
GPU driver, topology discovery, the Helm charts and the GPU Operator.
Called from ``intent.rules`` (NODE_RULES, CLUSTER_RULES); each takes the normalised values and appends problems.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import (
    CHART_VERSION_RE,
    Problems,
    dns_label,
    dns_subdomain,
    in_range,
    keyring_file,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import network_operator as _network_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import signing_key as _signing_key


def doca_rules(values: Mapping[str, Any], problems: Problems) -> None:
    ver = values.get("doca_ofed_version")
    if "doca_ofed_version" in values and not re.fullmatch(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.+~]+)?$", str(ver)):
        problems.append(
            f"doca_ofed_version: {show(ver)} is not a DOCA release like 2.9.1 or an exact version like 2.9.1-0.1.4"
        )
    # Without the signature check, apt trusts whatever the repository (or anyone between) serves, as root.
    if values.get("doca_ofed_gpg_check") is False and values.get("doca_ofed_insecure_repo_acknowledged") is not True:
        problems.append(
            "doca_ofed_gpg_check: false makes the DOCA repository trusted without a signature ([trusted=yes], "
            "gpgcheck=0); set doca_ofed_insecure_repo_acknowledged: true to accept that, or keep "
            "doca_ofed_gpg_check: true (allowed with false: only doca_ofed_insecure_repo_acknowledged: true)"
        )
    if (
        values.get("gpufabric_doca_ofed_enabled")
        and values.get("doca_ofed_gpg_check") is not False
        and "doca_ofed_gpg_key_fingerprints" in values
        and not values.get("doca_ofed_gpg_key_fingerprints")
    ):
        problems.append(
            "doca_ofed_gpg_key_fingerprints: is empty; pin the fingerprint of the DOCA repository's signing key "
            "(GPG-KEY-Mellanox.pub; allowed: a list of 40-hex-digit fingerprints, as gpg --show-keys prints them "
            "for the key you verified with NVIDIA), or the key is refused before anything is installed"
        )
    if values.get("doca_ofed_k8s_drain") == "always" and not values.get("gpufabric_kubeconfig"):
        problems.append("doca_ofed_k8s_drain: 'always' needs gpufabric_kubeconfig (the cluster to drain the node in)")
    for key in ("doca_ofed_reboot_timeout", "doca_ofed_k8s_drain_timeout", "doca_ofed_k8s_drain_retry_delay"):
        if values.get(key) is not None:
            in_range(problems, key, values[key], 1, 86400)


SIGNING_KEY_PINS = (
    "doca_ofed_gpg_key_fingerprints",
    "gpu_driver_repo_key_fingerprints",
    "gpudirect_storage_repo_key_fingerprints",
    "storage_client_lustre_repo_key_fingerprints",
    "storage_client_gpfs_repo_key_fingerprints",
)


def signing_key_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """Each pinned repository key is a whole fingerprint: a short key ID is forged in minutes."""
    for key in SIGNING_KEY_PINS:
        for index, value in enumerate(values.get(key) or []):
            if _signing_key.normalise_fingerprint(value) is None:
                problems.append(
                    f"{key}[{index}]: {show(value)} is not a key fingerprint; allowed: 40 hexadecimal digits "
                    "(spaces allowed), as gpg --show-keys --fingerprint prints them; a short key ID pins nothing"
                )


def nccl_config_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if values.get("nccl_config_topo_xml_source") == "file" and not values.get("nccl_config_topo_xml_src"):
        problems.append("nccl_config_topo_xml_src: is required when nccl_config_topo_xml_source is file")
    gid = values.get("nccl_config_ib_gid_index")
    if gid is not None:
        in_range(problems, "nccl_config_ib_gid_index", gid, -1, 255)
    for key in values.get("nccl_config_extra") or {}:
        if not re.fullmatch(r"^NCCL_[A-Z0-9_]+$", str(key)):
            problems.append(
                f"nccl_config_extra: {show(key)} is not an NCCL variable name (NCCL_ followed by A-Z, 0-9, _)"
            )


DRIVER_VERSION_RE = re.compile(r"^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$")


def gpu_driver_rules(values: Mapping[str, Any], problems: Problems) -> None:
    for key in ("gpu_driver_k8s_drain_timeout", "gpu_driver_k8s_drain_retry_delay"):
        if values.get(key) is not None:
            in_range(problems, key, values[key], 1, 86400)
    driver = values.get("gpufabric_gpu_driver")
    if not isinstance(driver, Mapping):
        return
    p = "gpufabric_gpu_driver."
    version_text = driver.get("version") or ""
    if version_text and not DRIVER_VERSION_RE.fullmatch(str(version_text)):
        problems.append(f"{p}version: {show(version_text)} is not an NVIDIA driver version like 580.95.05")
    if driver.get("managed_by") == "operator" and not version_text:
        problems.append(
            f"{p}version: is required when {p}managed_by is operator (the driver container tag the GPU Operator "
            "deploys, e.g. 580.95.05)"
        )
    for index, name in enumerate(driver.get("packages") or []):
        if not re.fullmatch(r"^[a-z0-9][a-z0-9+.-]+$", str(name)):
            problems.append(f"{p}packages[{index}]: {show(name)} is not a package name")
    if driver.get("packages") and not version_text:
        problems.append(
            f"{p}version: is required with {p}packages (the driver version the packages are installed at, "
            "e.g. 580.95.05)"
        )
    if driver.get("managed_by") == "host" and driver.get("precompiled"):
        problems.append(
            f"{p}precompiled: true applies to the GPU Operator's driver, but {p}managed_by is host; "
            "set managed_by: operator or precompiled: false"
        )


def topology_rules(values: Mapping[str, Any], problems: Problems) -> None:
    path = values.get("topology_report_dir")
    if "topology_report_dir" in values and not (isinstance(path, str) and path.startswith("/")):
        problems.append(f"topology_report_dir: {show(path)} must be an absolute path on the node")


def chart_rules(values: Mapping[str, Any], problems: Problems) -> None:
    for role in ("network_operator", "gpu_operator"):
        ver = values.get(f"{role}_chart_version")
        path = values.get(f"{role}_chart_path")
        if f"{role}_chart_version" in values and not CHART_VERSION_RE.fullmatch(str(ver)):
            problems.append(f"{role}_chart_version: {show(ver)} must be a pinned chart version such as 26.4.1")
        elif role == "network_operator" and f"{role}_chart_version" in values:
            outside = _network_operator.range_problem(f"{role}_chart_version", ver)
            if outside:
                problems.append(outside)
        if (
            f"{role}_chart_path" in values
            and not path
            and not (values.get(f"{role}_chart_repo_url") and values.get(f"{role}_chart_name"))
        ):
            problems.append(
                f"{role}_chart_path: is empty and {role}_chart_repo_url / {role}_chart_name are not both set"
            )
        keyring_file(problems, f"{role}_chart_keyring", values.get(f"{role}_chart_keyring"))
        timeout = values.get(f"{role}_wait_timeout")
        if timeout is not None:
            in_range(problems, f"{role}_wait_timeout", timeout, 1, 86400)
        delay = values.get(f"{role}_wait_delay")
        if delay is not None:
            in_range(problems, f"{role}_wait_delay", delay, 1, 3600)


# The oldest GPU Operator chart whose values the gpu_operator planner writes (v24.9.0: the
# nvidiaDriverCRD.deployDefaultCR switch; driver.useOpenKernelModules until v25.3.0).
GPU_OPERATOR_MIN_CHART = (24, 9, 0)
REGISTRY_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)*$")


def gpu_operator_rules(values: Mapping[str, Any], problems: Problems) -> None:
    if "gpu_operator_chart_version" not in values:
        return
    chart = str(values.get("gpu_operator_chart_version") or "")
    match = CHART_VERSION_RE.fullmatch(chart)
    if match and tuple(int(x) for x in match.groups()[:3]) < GPU_OPERATOR_MIN_CHART:
        problems.append(
            f"gpu_operator_chart_version: {show(chart)} is older than v24.9.0, the oldest chart whose values "
            "this role writes"
        )
    registry = values.get("gpu_operator_image_registry") or ""
    if registry and not REGISTRY_RE.fullmatch(str(registry)):
        problems.append(
            f"gpu_operator_image_registry: {show(registry)} is not a registry host[:port][/path] without a scheme "
            "or a trailing slash, like registry.example.com:5000/mirror"
        )
    gds = values.get("gpu_operator_gds_version")
    if "gpu_operator_gds_version" in values and not re.fullmatch(r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$", str(gds)):
        problems.append(f"gpu_operator_gds_version: {show(gds)} is not an nvidia-fs image tag like 2.29.4")
    for index, name in enumerate(values.get("gpu_operator_image_pull_secrets") or []):
        dns_subdomain(problems, f"gpu_operator_image_pull_secrets[{index}]", name)
    dns_label(problems, "gpu_operator_namespace", values.get("gpu_operator_namespace"))
