# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's storage plan: every node's filesystems + storage_csi's variables -> CSI drivers and objects.

``plan(values, nodes)`` is called from ``_plan_cluster.plan``. ``nodes`` maps each GPU node to its
record, whose ``storage`` lists the filesystems that node has (``_plan_storage.record``). A
filesystem must be defined alike on every node that has it. For each backend that Pods reach
through CSI, it plans how the driver is installed (a pinned Helm chart from a repository or a
local path, or a manifest the user keeps, with every image moved to ``storage_csi_image_registry``
when an air-gapped mirror is given) and the objects: StorageClasses, static PersistentVolumes and
their claims, the NFS mount-options Secrets, the IBM Storage Scale ``CSIScaleOperator``, and node
labels that place the drivers and the static volumes on the nodes that have the filesystem.

Upstream facts, per driver (repository, path, version):
- nfs: kubernetes-csi/csi-driver-nfs charts/v4.13.4 (values.yaml image.baseRepo, image.nfs),
  docs/driver-parameters.md, deploy/example/pv-nfs-csi.yaml; driver nfs.csi.k8s.io.
- lustre: HewlettPackard/lustre-csi-driver v0.1.11 charts/lustre-csi-driver (chart 0.0.3, values
  deployment.image/tag), deploy/kubernetes/base/example_pv.yaml; driver lustre-csi.hpe.com,
  static provisioning only; the chart is not published in a chart repository.
- weka: weka/csi-wekafs v2.8.8 charts/csi-wekafsplugin (values images.*),
  examples/dynamic_directory/storageclass-wekafs-dir-api.yaml,
  examples/static_volume/static_filesystem/pv-wekafs-fs-static-api.yaml; driver csi.weka.io.
- gpfs: IBM/ibm-spectrum-scale-csi v3.0.0 generated/installer/ibm-spectrum-scale-csi-operator.yaml
  (operator, image defaults in its CSI_*_IMAGE variables), operator/config/crd/bases/
  csi.ibm.com_csiscaleoperators.yaml (the CR schema), driver/examples/version2/volume/
  storageclass.yaml; driver spectrumscale.csi.ibm.com.
- nvmeof: kubernetes-csi/csi-driver-nvmf deploy/kubernetes/*.yaml and
  examples/kubernetes/fs-example/pv.yaml; driver csi.nvmf.com; no published image or chart.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY, backend, by_csi_rank
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import fs_label as _fs_label
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import merge as _merge
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import meta as _meta
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import mirrored

DRIVER_NAMES = {b.name: b.csi_driver for b in by_csi_rank()}
# The static volumes' claims' namespace unless gpufabric_storage names another (k8s.namespace).
CLAIM_NAMESPACE = "default"
# The kinds of custom resources the plan writes, and their CRDs (the CRD's plural is the RBAC resource).
CRD_NAMES = {kind: crd for b in REGISTRY.values() for kind, crd in b.crds.items()}


# --------------------------------------------------------------------------------------------- images
def rewrite_images(objects: List[Dict[str, Any]], mapping: Mapping[str, str], registry: str) -> List[Dict[str, Any]]:
    """Manifest objects with each container image replaced (``mapping`` first, then the mirror)."""
    out = json.loads(json.dumps(objects))
    for obj in out:
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or []:
                image = container.get("image")
                if isinstance(image, str):
                    container["image"] = mirrored(mapping.get(image, image), registry)
                for env in container.get("env") or []:
                    if str(env.get("name", "")).endswith("_IMAGE") and isinstance(env.get("value"), str):
                        env["value"] = mirrored(mapping.get(env["value"], env["value"]), registry)
    return out


# --------------------------------------------------------------------------------------------- filesystems
def filesystems(nodes: Mapping[str, Mapping[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, List[str]], List[str]]:
    """(the filesystems, {name: k8s node names that have it}, problems): one definition per name."""
    problems: List[str] = []
    by_name: Dict[str, Dict[str, Any]] = {}
    first_host: Dict[str, str] = {}
    where: Dict[str, List[str]] = {}
    for host, node in sorted(nodes.items()):
        for fs in node.get("storage") or []:
            name = fs["name"]
            if name in by_name and by_name[name] != fs:
                differs = sorted(k for k in set(fs) | set(by_name[name]) if fs.get(k) != by_name[name].get(k))
                problems.append(
                    f"gpufabric_storage: filesystem {name!r} is defined differently on {host} and {first_host[name]} "
                    f"({', '.join(differs)} differ); define it once, in group_vars"
                )
                continue
            by_name.setdefault(name, fs)
            first_host.setdefault(name, host)
            where.setdefault(name, []).append(str(node.get("k8s_node_name") or host))
    return [by_name[n] for n in sorted(by_name)], where, problems


def _storage_class(fs: Mapping[str, Any], drivers: Mapping[str, Any], prefix: str) -> List[Dict[str, Any]]:
    k8s = fs["k8s"]
    sc: Dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": _meta(k8s["storage_class"], labels=_fs_label(fs, prefix)),
        "provisioner": DRIVER_NAMES[fs["backend"]],
        "reclaimPolicy": k8s["reclaim_policy"],
        "volumeBindingMode": "Immediate",
    }
    namespace = k8s.get("secret_namespace") or drivers[fs["backend"]]["namespace"]
    extra = backend(fs["backend"]).storage_class(fs, sc, namespace, prefix)
    return [sc, *extra]


def _static(fs: Mapping[str, Any], drivers: Mapping[str, Any], prefix: str) -> List[Dict[str, Any]]:
    k8s = fs["k8s"]
    name = k8s["storage_class"]
    node_label = f"{prefix}/fs-{fs['name']}"
    csi: Dict[str, Any] = {"driver": DRIVER_NAMES[fs["backend"]]}
    access, mount_options = backend(fs["backend"]).static_csi(fs, csi, drivers)
    pv: Dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(name, labels=_fs_label(fs, prefix)),
        "spec": {
            "capacity": {"storage": k8s["capacity"]},
            "volumeMode": "Filesystem",
            "accessModes": access,
            "persistentVolumeReclaimPolicy": k8s["reclaim_policy"],
            "storageClassName": name,
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": k8s["namespace"], "name": name},
            "csi": csi,
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": node_label, "operator": "In", "values": ["true"]}]}
                    ]
                }
            },
        },
    }
    if mount_options:
        pv["spec"]["mountOptions"] = mount_options
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, k8s["namespace"], _fs_label(fs, prefix)),
        "spec": {
            "accessModes": list(access),
            "storageClassName": name,
            "volumeName": name,
            "resources": {"requests": {"storage": k8s["capacity"]}},
        },
    }
    return [pv, pvc]


# --------------------------------------------------------------------------------------------- drivers
def _install(name: str, config: Mapping[str, Any], registry: str, problems: List[str]) -> Dict[str, Any]:
    var = f"storage_csi_drivers.{name}"
    item = backend(name)
    install: Dict[str, Any] = {
        "driver": DRIVER_NAMES[name],
        "namespace": config["namespace"],
        "release_name": config.get("release_name"),
    }
    if item.csi_install == "manifest":
        install["kind"] = "manifest"
        install["manifest"] = config.get("manifest") or ""
        if not install["manifest"]:
            what = item.csi_manifest_what
            problems.append(f"{var}.manifest: is required for the {name} CSI driver: the path of {what}")
        install["images"] = item.install_images(config, var, problems)
        install["registry"] = registry
        return install
    install["kind"] = "helm"
    for key in ("chart_repo_url", "chart_name", "chart_version", "chart_path", "chart_keyring"):
        install[key] = config.get(key) or ""
    if not install["chart_path"] and not (install["chart_repo_url"] and install["chart_name"]):
        problems.append(
            f"{var}.chart_path: is empty and chart_repo_url / chart_name are not both set{item.csi_chart_hint}"
        )
    install["values"] = _merge(item.helm_values(registry), config.get("values") or {})
    return install


def kustomization(helm_drivers: List[Mapping[str, Any]], files: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """The render directory's kustomization.yaml as data, for a YAML emitter to write (never text built by
    interpolation, where a value with a newline would add keys of its own).

    ``helm_drivers``: the plan's drivers installed with Helm, as ``dict2items`` gives them (key: the backend,
    value: the driver's plan); ``files``: the rendered object files (``file``), the kustomization's resources.
    kustomize's helmCharts fields (kubectl-docs, "helmCharts", kustomize v5): name, repo, version,
    releaseName, namespace, includeCRDs, valuesFile; an entry has no chart home of its own (kustomize v5.8
    refuses the field: there is one, helmGlobals.chartHome, "charts" by default).

    An entry without a repo is read from charts/NAME (kustomize's HelmChartInflationGenerator), where
    render mode ships two kinds of chart: a local chart (chart_path, under its directory's name) and a
    chart from a repository with a chart_keyring, verified first; kustomize then downloads neither."""
    doc: Dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    charts = []
    for driver in helm_drivers or []:
        value = driver["value"]
        path = value.get("chart_path")
        chart: Dict[str, Any] = {"name": posixpath.basename(path.rstrip("/")) if path else value.get("chart_name")}
        if not path:
            if not value.get("chart_keyring"):
                chart["repo"] = value.get("chart_repo_url")
            chart["version"] = str(value.get("chart_version"))
        chart["releaseName"] = value.get("release_name")
        chart["namespace"] = value.get("namespace")
        chart["includeCRDs"] = True
        chart["valuesFile"] = f"values-{driver['key']}.yaml"
        charts.append(chart)
    if charts:
        doc["helmCharts"] = charts
    doc["resources"] = [f["file"] for f in files or []]
    return doc


def _prune_namespaces(
    drivers_cfg: Mapping[str, Any], objects: Mapping[str, List[Dict[str, Any]]]
) -> Tuple[Set[str], Set[str]]:
    """Where the role lists its Secrets and claims to prune those that left the plan (not in every
    namespace: the shipped RBAC grants claims by Role in these namespaces only).

    Secrets: the NFS driver's namespace, which a removed filesystem's Secret most likely used, and
    the namespace of every planned Secret. Claims: "default", the claims' namespace unless
    gpufabric_storage names another, and the namespace of every planned claim."""
    secret_namespaces = {str((drivers_cfg.get("nfs") or {}).get("namespace") or "")}
    secret_namespaces.update(
        o["metadata"]["namespace"] for part in objects.values() for o in part if o["kind"] == "Secret"
    )
    claim_namespaces = {CLAIM_NAMESPACE}
    claim_namespaces.update(
        o["metadata"]["namespace"] for part in objects.values() for o in part if o["kind"] == "PersistentVolumeClaim"
    )
    return secret_namespaces, claim_namespaces


def _node_labels(
    fss: List[Mapping[str, Any]], where: Mapping[str, List[str]], label_prefix: str
) -> Dict[str, Dict[str, str]]:
    """The labels of each node: one per filesystem it has and one per backend of those."""
    labels: Dict[str, Dict[str, str]] = {}
    for fs in fss:
        for node in where.get(fs["name"], []):
            labels.setdefault(node, {})[f"{label_prefix}/fs-{fs['name']}"] = "true"
            labels[node][f"{label_prefix}/storage-{fs['backend']}"] = "true"
    return labels


def plan(
    values: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], label_prefix: str, problems: List[str]
) -> Optional[Dict[str, Any]]:
    """The storage_csi role's part of the cluster plan, None when the role is not part of the cluster layer;
    appends to ``problems`` what makes it invalid."""
    fss, where, fs_problems = filesystems(nodes)
    problems.extend(fs_problems)
    csi = [fs for fs in fss if fs["pods"] in ("storageclass", "static_pv")]
    if "storage_csi_drivers" not in values:
        for fs in csi:
            problems.append(
                f"gpufabric_storage: filesystem {fs['name']!r} has pods: {fs['pods']}, but storage_csi is not in "
                "plan_cluster_roles: nothing would install its CSI driver and objects; add it, or set pods: host or "
                "none"
            )
        return None
    drivers_cfg = values["storage_csi_drivers"]
    registry = str(values.get("storage_csi_image_registry") or "")
    backends = [b.name for b in by_csi_rank() if any(fs["backend"] == b.name for fs in csi)]
    # Drivers an administrator installs (storage_csi_install_drivers false) need no source here.
    install = bool(values.get("storage_csi_install_drivers", True))
    drivers = {
        backend: _install(backend, drivers_cfg[backend], registry, problems if install else []) for backend in backends
    }
    for driver in drivers.values():
        driver["install"] = install
    objects: Dict[str, List[Dict[str, Any]]] = {"storage_classes": [], "volumes": [], "operators": []}
    for fs in csi:
        if fs["pods"] == "storageclass":
            objects["storage_classes"] += _storage_class(fs, drivers, label_prefix)
        else:
            objects["volumes"] += _static(fs, drivers, label_prefix)
    for name in backends:
        own = [fs for fs in csi if fs["backend"] == name]
        label = f"{label_prefix}/storage-{name}"
        objects["operators"] += backend(name).operators(own, drivers_cfg[name], registry, label, problems)
    secret_namespaces, claim_namespaces = _prune_namespaces(drivers_cfg, objects)
    labels = _node_labels(fss, where, label_prefix)
    return {
        "filesystems": [
            {
                "name": fs["name"],
                "backend": fs["backend"],
                "pods": fs["pods"],
                "storage_class": fs["k8s"]["storage_class"] if fs["pods"] in ("storageclass", "static_pv") else None,
                "nodes": where.get(fs["name"], []),
            }
            for fs in fss
        ],
        "drivers": drivers,
        "objects": objects,
        "crds": {o["kind"]: CRD_NAMES[o["kind"]] for o in objects["operators"]},
        # storage_csi prunes the Secrets it made in these namespaces only (k8s_publish prune kinds)
        "secret_prune_kinds": [
            {"api_group": "", "version": "v1", "resources": ["secrets"], "namespace": namespace}
            for namespace in sorted(n for n in secret_namespaces if n)
        ],
        # storage_csi lists (to prune, and to find the claims about to leave) in these namespaces only
        "claim_prune_kinds": [
            {"api_group": "", "version": "v1", "resources": ["persistentvolumeclaims"], "namespace": namespace}
            for namespace in sorted(claim_namespaces)
        ],
        "node_labels": {node: dict(sorted(v.items())) for node, v in sorted(labels.items())},
        # the key prefixes node_labels owns: the label of a filesystem or backend gone is removed
        "node_label_owned": [f"{label_prefix}/fs-*", f"{label_prefix}/storage-*"],
    }


def summary_lines(storage: Optional[Mapping[str, Any]]) -> List[str]:
    if not storage or not storage.get("filesystems"):
        return []
    lines = ["storage:"]
    for fs in storage["filesystems"]:
        access = fs["pods"] + (f" {fs['storage_class']}" if fs.get("storage_class") else "")
        lines.append(f"  {fs['name']} ({fs['backend']}) on {len(fs['nodes'])} node(s), Pods: {access}")
    for driver in storage["drivers"].values():
        source = (
            driver.get("chart_path")
            or driver.get("manifest")
            or (f"{driver.get('chart_repo_url')} {driver.get('chart_name')} {driver.get('chart_version')}")
        )
        if not driver.get("install", True):
            source = "installed by the cluster administrator (storage_csi_install_drivers: false)"
        lines.append(f"  CSI {driver['driver']} ({driver['kind']}): {source}")
    return lines
