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
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.gpu_operator import MANAGED_BY

DRIVER_NAMES = {
    "nfs": "nfs.csi.k8s.io",
    "lustre": "lustre-csi.hpe.com",
    "weka": "csi.weka.io",
    "gpfs": "spectrumscale.csi.ibm.com",
    "nvmeof": "csi.nvmf.com",
}
# The static volumes' claims' namespace unless gpufabric_storage names another (k8s.namespace).
CLAIM_NAMESPACE = "default"
# The kinds of custom resources the plan writes, and their CRDs (the CRD's plural is the RBAC resource).
CRD_NAMES = {"CSIScaleOperator": "csiscaleoperators.csi.ibm.com"}
# Images the charts and manifests reference by default, so that a mirror can take each one.
WEKA_IMAGES = {
    "livenessprobesidecar": "registry.k8s.io/sig-storage/livenessprobe:v2.18.0",
    "attachersidecar": "registry.k8s.io/sig-storage/csi-attacher:v4.11.0",
    "provisionersidecar": "registry.k8s.io/sig-storage/csi-provisioner:v6.2.0",
    "registrarsidecar": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.16.0",
    "resizersidecar": "registry.k8s.io/sig-storage/csi-resizer:v2.1.0",
    "snapshottersidecar": "registry.k8s.io/sig-storage/csi-snapshotter:v8.5.0",
    "csidriver": "quay.io/weka.io/csi-wekafs",
}
SCALE_IMAGES = {
    "spectrumScale": "quay.io/ibm-spectrum-scale/ibm-spectrum-scale-csi-driver@sha256:"
    "b367ac63080cf5f544ff3410817ac6a594ac1b2a4f7936eb0c140b2a108d2514",
    "snapshotter": "registry.k8s.io/sig-storage/csi-snapshotter@sha256:"
    "bc7be893ecc3ad524194aa6573b2f5c06cd469bdf21a500ab6c99c2ba1c4d64d",
    "attacher": "registry.k8s.io/sig-storage/csi-attacher@sha256:"
    "5aaefc24f315b182233c8b6146077f8c32e274d864cb03c632206e78bd0302da",
    "provisioner": "registry.k8s.io/sig-storage/csi-provisioner@sha256:"
    "bb057f866177d5f4139a1527e594499cbe0feeb67b63aaca8679dfdf0a6016f9",
    "livenessprobe": "registry.k8s.io/sig-storage/livenessprobe@sha256:"
    "88092d100909918ae0a768956cf78c88bc59cd7232720f7cdbdfb5d2e235001e",
    "driverRegistrar": "registry.k8s.io/sig-storage/csi-node-driver-registrar@sha256:"
    "5244abbe87e01b35adeb8bb13882a74785df0c0619f8325c9e950395c3f72a97",
    "resizer": "registry.k8s.io/sig-storage/csi-resizer@sha256:"
    "5e7cbb63fd497fa913caa21fee1a69f727c220c6fa83c5f8bb0995e2ad73a474",
}
NVMF_PLUGIN_IMAGE = "nvmfplugin:latest"  # what deploy/kubernetes/csi-nvmf-*.yaml reference; built by the user


# --------------------------------------------------------------------------------------------- images
def mirrored(image: str, registry: str) -> str:
    """``image`` pulled from ``registry`` instead: its registry host is replaced (Docker Hub names get one)."""
    if not registry:
        return image
    first, _sep, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{registry.rstrip('/')}/{rest}"
    return f"{registry.rstrip('/')}/{image}"


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


def _meta(name: str, namespace: Optional[str] = None, labels: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, **(labels or {})}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _fs_label(fs: Mapping[str, Any], prefix: str) -> Dict[str, str]:
    """The label that ties an object to its filesystem."""
    return {f"{prefix}/filesystem": fs["name"]}


def _secret_params(name: str, namespace: str, kinds: Tuple[str, ...]) -> Dict[str, str]:
    out = {}
    for kind in kinds:
        out[f"csi.storage.k8s.io/{kind}-secret-name"] = name
        out[f"csi.storage.k8s.io/{kind}-secret-namespace"] = namespace
    return out


def _storage_class(fs: Mapping[str, Any], drivers: Mapping[str, Any], prefix: str) -> List[Dict[str, Any]]:
    k8s = fs["k8s"]
    backend = fs["backend"]
    sc: Dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": _meta(k8s["storage_class"], labels=_fs_label(fs, prefix)),
        "provisioner": DRIVER_NAMES[backend],
        "reclaimPolicy": k8s["reclaim_policy"],
        "volumeBindingMode": "Immediate",
    }
    extra: List[Dict[str, Any]] = []
    namespace = k8s.get("secret_namespace") or drivers[backend]["namespace"]
    if backend == "nfs":
        sc["parameters"] = {"server": fs["servers"][0], "share": fs["export"]}
        sc["mountOptions"] = list(fs["mount_options"])
        # DeleteVolume mounts the share without the class's mountOptions; an RDMA-only server needs them (facts §9.6).
        secret = k8s.get("secret") or f"{k8s['storage_class']}-mount-options"
        sc["parameters"].update(_secret_params(secret, namespace, ("provisioner",)))
        if not k8s.get("secret"):
            extra.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": _meta(secret, namespace, _fs_label(fs, prefix)),
                    "type": "Opaque",
                    "stringData": {"mountOptions": ",".join(fs["mount_options"])},
                }
            )
        sc["allowVolumeExpansion"] = False
    elif backend == "weka":
        sc["parameters"] = {
            "volumeType": "dir/v1",
            "filesystemName": fs["export"],
            "capacityEnforcement": "HARD",
            **_secret_params(
                k8s["secret"],
                namespace,
                ("provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish"),
            ),
        }
        if fs["mount_options"]:
            sc["parameters"]["mountOptions"] = ",".join(o for o in fs["mount_options"] if not o.startswith("net="))
        sc["allowVolumeExpansion"] = True
    elif backend == "gpfs":
        sc["parameters"] = {"volBackendFs": fs["export"], "clusterId": str((fs.get("gpfs") or {}).get("cluster_id"))}
        sc["allowVolumeExpansion"] = True
    return [sc, *extra]


def _static(fs: Mapping[str, Any], drivers: Mapping[str, Any], prefix: str) -> List[Dict[str, Any]]:
    k8s = fs["k8s"]
    backend = fs["backend"]
    name = k8s["storage_class"]
    node_label = f"{prefix}/fs-{fs['name']}"
    csi: Dict[str, Any] = {"driver": DRIVER_NAMES[backend]}
    access = ["ReadWriteMany"]
    mount_options = list(fs["mount_options"])
    if backend == "nfs":
        csi["volumeHandle"] = f"{fs['servers'][0]}#{fs['export']}#"
        csi["volumeAttributes"] = {"server": fs["servers"][0], "share": fs["export"]}
    elif backend == "lustre":
        csi["volumeHandle"] = ":".join(fs["lustre"]["nids"]) + f":/{fs['export']}"
        csi["fsType"] = "lustre"
    elif backend == "weka":
        csi["volumeHandle"] = f"weka/v2/{fs['export']}"
        namespace = k8s.get("secret_namespace") or drivers["weka"]["namespace"]
        ref = {"name": k8s["secret"], "namespace": namespace}
        csi["nodePublishSecretRef"] = dict(ref)
        csi["controllerExpandSecretRef"] = dict(ref)
        mount_options = [o for o in mount_options if not o.startswith("net=")]
    elif backend == "nvmeof":
        access = ["ReadWriteOnce"]
        mount_options = []
        csi["volumeHandle"] = f"gpufabric-{fs['name']}"
        csi["volumeAttributes"] = {
            "targetTrAddr": ",".join(fs["servers"]),
            "targetTrPort": str(fs["port"]),
            "targetTrType": fs["transport"],
            "nqn": fs["export"],
            "deviceID": str((fs.get("nvmeof") or {}).get("device_id")),
        }
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
def _install(backend: str, config: Mapping[str, Any], registry: str, problems: List[str]) -> Dict[str, Any]:
    var = f"storage_csi_drivers.{backend}"
    install: Dict[str, Any] = {
        "driver": DRIVER_NAMES[backend],
        "namespace": config["namespace"],
        "release_name": config.get("release_name"),
    }
    if backend in ("gpfs", "nvmeof"):
        install["kind"] = "manifest"
        install["manifest"] = config.get("manifest") or ""
        if not install["manifest"]:
            what = (
                "the IBM Storage Scale CSI operator installer (IBM/ibm-spectrum-scale-csi "
                "generated/installer/ibm-spectrum-scale-csi-operator.yaml at the release you run, e.g. v3.0.0)"
                if backend == "gpfs"
                else "the driver's deploy/kubernetes directory (kubernetes-csi/csi-driver-nvmf at a pinned commit)"
            )
            problems.append(f"{var}.manifest: is required for the {backend} CSI driver: the path of {what}")
        images: Dict[str, str] = {}
        if backend == "nvmeof":
            if not config.get("image"):
                problems.append(
                    f"{var}.image: is required: kubernetes-csi/csi-driver-nvmf publishes no image; build it "
                    "(make container) and push it to a registry the nodes pull from"
                )
            images[NVMF_PLUGIN_IMAGE] = str(config.get("image") or NVMF_PLUGIN_IMAGE)
        install["images"] = images
        install["registry"] = registry
        return install
    install["kind"] = "helm"
    for key in ("chart_repo_url", "chart_name", "chart_version", "chart_path", "chart_keyring"):
        install[key] = config.get(key) or ""
    if not install["chart_path"] and not (install["chart_repo_url"] and install["chart_name"]):
        hint = (
            " (HewlettPackard/lustre-csi-driver publishes its chart only in its repository: check out tag v0.1.11 "
            "and give charts/lustre-csi-driver)"
            if backend == "lustre"
            else ""
        )
        problems.append(f"{var}.chart_path: is empty and chart_repo_url / chart_name are not both set{hint}")
    values: Dict[str, Any] = {}
    if backend == "nfs" and registry:
        values = {"image": {"baseRepo": registry, "nfs": {"repository": f"{registry}/sig-storage/nfsplugin"}}}
    elif backend == "lustre":
        image = mirrored("ghcr.io/hewlettpackard/lustre-csi-driver", registry)
        values = {"deployment": {"image": image, "tag": "0.1.11"}}
    elif backend == "weka" and registry:
        values = {"images": {key: mirrored(image, registry) for key, image in WEKA_IMAGES.items()}}
    install["values"] = _merge(values, config.get("values") or {})
    return install


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in (extra or {}).items():
        both = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = _merge(out[key], value) if both else value
    return out


def _scale_cr(fss: List[Mapping[str, Any]], config: Mapping[str, Any], registry: str, label: str, problems: List[str]):
    clusters = sorted({str((fs.get("gpfs") or {}).get("cluster_id")) for fs in fss})
    if len(clusters) > 1:
        problems.append(
            "gpufabric_storage: the gpfs filesystems name {} Scale clusters ({}); one CSIScaleOperator serves one "
            "local cluster here (remote clusters are not planned)".format(len(clusters), ", ".join(clusters))
        )
    first = fss[0]
    hosts: List[str] = []
    for fs in fss:
        hosts += [h for h in fs["servers"] if h not in hosts]
    selector = [{"key": label, "value": "true"}]
    spec: Dict[str, Any] = {
        "localScaleCluster": clusters[0],
        "clusters": [
            {
                "id": clusters[0],
                "secrets": first["k8s"]["secret"],
                "secureSslMode": False,
                "restApi": [{"guiHost": host} for host in hosts],
            }
        ],
        "pluginNodeSelector": selector,
        "attacherNodeSelector": selector,
        "provisionerNodeSelector": selector,
        "snapshotterNodeSelector": selector,
        "resizerNodeSelector": selector,
    }
    if registry:
        spec.update({key: mirrored(image, registry) for key, image in SCALE_IMAGES.items()})
    return {
        "apiVersion": "csi.ibm.com/v1",
        "kind": "CSIScaleOperator",
        "metadata": _meta(config["release_name"], config["namespace"]),
        "spec": _merge(spec, config.get("values") or {}),
    }


def kustomization(helm_drivers: List[Mapping[str, Any]], files: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """The render directory's kustomization.yaml as data, for a YAML emitter to write (never text built by
    interpolation, where a value with a newline would add keys of its own).

    ``helm_drivers``: the plan's drivers installed with Helm, as ``dict2items`` gives them (key: the backend,
    value: the driver's plan); ``files``: the rendered object files (``file``), the kustomization's resources.
    kustomize's helmCharts fields (kubectl-docs, "helmCharts", kustomize v5): name, repo, version, chartHome,
    releaseName, namespace, includeCRDs, valuesFile."""
    doc: Dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    charts = []
    for driver in helm_drivers or []:
        value = driver["value"]
        path = value.get("chart_path")
        chart: Dict[str, Any] = {"name": posixpath.basename(path) if path else value.get("chart_name")}
        if path:
            chart["chartHome"] = posixpath.dirname(path)
        else:
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
    backends = [b for b in ("nfs", "lustre", "weka", "gpfs", "nvmeof") if any(fs["backend"] == b for fs in csi)]
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
    if "gpfs" in drivers:
        gpfs = [fs for fs in csi if fs["backend"] == "gpfs"]
        label = f"{label_prefix}/storage-gpfs"
        objects["operators"].append(_scale_cr(gpfs, drivers_cfg["gpfs"], registry, label, problems))
    # Where the Secrets the role writes live, listed there (not in every namespace) to prune those that
    # left the plan: the NFS driver's namespace, which a removed filesystem's Secret most likely used,
    # and the namespace of every planned Secret.
    secret_namespaces = {str((drivers_cfg.get("nfs") or {}).get("namespace") or "")}
    secret_namespaces.update(
        o["metadata"]["namespace"] for part in objects.values() for o in part if o["kind"] == "Secret"
    )
    # Where the static volumes' claims live, listed there (not in every namespace: the shipped RBAC
    # grants claims by Role in these namespaces only): "default", the claims' namespace unless
    # gpufabric_storage names another, and the namespace of every planned claim.
    claim_namespaces = {CLAIM_NAMESPACE}
    claim_namespaces.update(
        o["metadata"]["namespace"] for part in objects.values() for o in part if o["kind"] == "PersistentVolumeClaim"
    )
    labels: Dict[str, Dict[str, str]] = {}
    for fs in fss:
        for node in where.get(fs["name"], []):
            labels.setdefault(node, {})[f"{label_prefix}/fs-{fs['name']}"] = "true"
            labels[node][f"{label_prefix}/storage-{fs['backend']}"] = "true"
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
