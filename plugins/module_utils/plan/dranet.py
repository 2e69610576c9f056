# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dranet, the RDMA NIC DRA driver (driver name ``dra.net``) that ``gpufabric_k8s_device_allocation:
dra`` needs for the rail NICs: its Helm release, planned for the network_operator role.

dranet publishes no provenance or signature for its chart. Its chart and image are promoted to
registry.k8s.io by the Kubernetes image promoter, whose manifest lists the digest of each
(kubernetes/k8s.io: registry.k8s.io/images/k8s-staging-networking/images.yaml; the release steps:
kubernetes-sigs/dranet RELEASE.md). So both are pinned by that digest: the chart is pulled from its
OCI repository and refused unless Helm reports the pinned manifest digest (apply/chart_digest.py),
and the image reference carries the image's digest, so the kubelet runs exactly that image whatever
the tag says later. A mirror that copies the artifacts (``crane copy``, ``oras cp``) keeps both
digests, so the air-gapped override is the repository (``network_operator_dranet_chart_ref``) and
the image root (``network_operator_dranet_image_registry``); a local chart
(``network_operator_dranet_chart_path``) is the site's, as the other charts' paths are.

Chart values (kubernetes-sigs/dranet, deployments/helm/dranet/values.yaml and templates/, tag
v1.4.0): ``image.repository``, ``image.tag`` (the template writes ``repository:tag``, so the tag
carries ``@sha256:...``), ``imagePullSecrets`` (Pod form, ``[{name: ...}]``), ``affinity`` (the
DaemonSet's). The DaemonSet runs on the nodes that carry the plan's node-group label, the GPU nodes
whose rail NICs the claim templates select.

Pure, no Ansible imports.
"""

from __future__ import annotations

import re
import tarfile
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import NIC_DRIVER, VARIABLE
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.gpu_operator_values import deep_merge, local_chart

PREFIX = "network_operator_dranet_"
IMAGE_PATH = "networking/dranet"  # under registry.k8s.io, kept under a mirror
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
OCI = re.compile(r"oci://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9._-]+)+")
CHART_NAME = "dranet"


def _var(values: Mapping[str, Any], name: str) -> Any:
    return values.get(PREFIX + name)


def chart_values(values: Mapping[str, Any], node_group_label: str) -> Dict[str, Any]:
    """The dranet chart's values: the pinned image (from the mirror when one is set), its pull
    secrets and the DaemonSet's node affinity; then network_operator_dranet_extra_values."""
    registry = str(_var(values, "image_registry") or "").rstrip("/")
    repository = f"{registry}/{IMAGE_PATH}" if registry else f"registry.k8s.io/{IMAGE_PATH}"
    generated: Dict[str, Any] = {
        "image": {
            "repository": repository,
            "tag": "{}@{}".format(_var(values, "version"), _var(values, "image_digest")),
        },
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": node_group_label, "operator": "Exists"}]}]
                }
            }
        },
    }
    secrets = list(_var(values, "image_pull_secrets") or [])
    if secrets:
        generated["imagePullSecrets"] = [{"name": name} for name in secrets]
    return deep_merge(generated, _var(values, "extra_values") or {})


OWNED = ("image", "affinity", "imagePullSecrets")


def check(values: Mapping[str, Any], problems: List[str]) -> None:
    """The pins, the chart source and the extra values, before any change."""
    for name in ("chart_digest", "image_digest"):
        digest = str(_var(values, name) or "")
        if not DIGEST.fullmatch(digest):
            problems.append(
                f"{PREFIX}{name}: {digest!r} is not a sha256 digest (sha256: and 64 lower-case hex digits); dranet "
                "publishes no signature, so the collection installs it only pinned by the digest its release "
                "published (registry.k8s.io/images/k8s-staging-networking/images.yaml in kubernetes/k8s.io)"
            )
    path = str(_var(values, "chart_path") or "")
    ref = str(_var(values, "chart_ref") or "")
    if not path and not OCI.fullmatch(ref):
        problems.append(
            f"{PREFIX}chart_ref: {ref!r} is not an OCI chart repository (oci://HOST[:PORT]/PATH/dranet); set it to "
            f"the chart's repository or its mirror, or {PREFIX}chart_path to a local chart"
        )
    if path:
        try:
            chart = local_chart(path)
        except (OSError, tarfile.TarError) as exc:
            problems.append(f"{PREFIX}chart_path: {path!r} cannot be read as a Helm chart ({exc})")
        else:
            if chart["name"] != CHART_NAME:
                problems.append(
                    f"{PREFIX}chart_path: {path!r} holds chart {chart['name']!r}, not {CHART_NAME!r}; point it at the "
                    "dranet chart"
                )
    extra = _var(values, "extra_values") or {}
    for key in OWNED:
        if key in extra:
            problems.append(
                f"{PREFIX}extra_values.{key} would override a value the plan sets (the pinned image, its mirror and "
                f"pull secrets, the GPU nodes' affinity); set {PREFIX}version, image_digest, image_registry or "
                "image_pull_secrets instead"
            )


def plan(values: Mapping[str, Any], node_group_label: str, problems: List[str]) -> Optional[Dict[str, Any]]:
    """The release in dra mode with the network_operator role and network_operator_dranet_install;
    None otherwise (device_plugin plans nothing here)."""
    if values.get(VARIABLE) != "dra" or "network_operator_chart_version" not in values:
        return None
    if not _var(values, "install"):
        return None
    check(values, problems)
    return {
        "driver": NIC_DRIVER,
        "release": {
            "name": str(_var(values, "release_name")),
            "namespace": str(_var(values, "namespace")),
            "chart_ref": str(_var(values, "chart_ref")),
            "chart_version": str(_var(values, "version")),
            "chart_digest": str(_var(values, "chart_digest")),
            "chart_path": str(_var(values, "chart_path") or ""),
            # a mirror served over plain HTTP (helm pull --plain-http); the digest check still fixes
            # the archive, so the transport adds no trust
            "chart_plain_http": bool(_var(values, "chart_plain_http")),
        },
        "chart_values": chart_values(values, node_group_label),
    }


def summary_lines(section: Optional[Mapping[str, Any]]) -> List[str]:
    if not section:
        return []
    release = section["release"]
    image = section["chart_values"]["image"]
    source = (
        f"local chart {release['chart_path']}"
        if release["chart_path"]
        else f"{release['chart_ref']}:{release['chart_version']}@{release['chart_digest']} (pinned by digest"
        + (", over plain HTTP)" if release.get("chart_plain_http") else ")")
    )
    return [
        f"dranet ({section['driver']}): release {release['name']} in {release['namespace']} from {source}, "
        f"image {image['repository']}:{image['tag']}"
    ]
