"""The cluster's storage plan (_plan_storage_csi via _plan_cluster.plan): CSI driver installs, StorageClasses,
static volumes, the Storage Scale operator CR and node labels, every object validated (core kinds with
kubernetes-validate, the CSIScaleOperator against its upstream CRD schema, tests/unit/storage/fixtures/crds)."""

from __future__ import annotations

import jsonschema
import pytest
import yaml
from kubernetes_support import validate_core
from storage_support import CRDS, CSI_VARS, UNIT, cluster_plan, lab_variables, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _cluster_objects
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError


def _crd_schemas():
    out = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            out[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return out


SCHEMAS = _crd_schemas()


def _pruned():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cluster_validate_for_storage", UNIT / "cluster" / "validate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pruned_fields


pruned_fields = _pruned()


def validate(obj):
    key = (obj["apiVersion"], obj["kind"])
    if key in SCHEMAS:
        jsonschema.Draft7Validator(SCHEMAS[key]).validate(obj)
        assert pruned_fields(obj, SCHEMAS[key]) == []
        return "crd"
    validate_core(obj)
    return "core"


def objects(storage):
    return [o for part in storage["objects"].values() for o in part]


def find(storage, kind, name):
    matches = [o for o in objects(storage) if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} objects"
    return matches[0]


def test_every_object_validates(check):
    storage = cluster_plan(check)["storage"]
    kinds = [validate(o) for o in objects(storage)]
    assert kinds.count("crd") == 1, "the CSIScaleOperator is checked against its CRD"
    assert sorted(o["kind"] for o in objects(storage)) == [
        "CSIScaleOperator",
        "PersistentVolume",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PersistentVolumeClaim",
        "Secret",
        "StorageClass",
        "StorageClass",
        "StorageClass",
    ]
    files = _cluster_objects.render_files(objects(storage))
    assert len({f["file"] for f in files}) == len(files)


def test_nfs_storage_class_mounts_over_rdma(check):
    storage = cluster_plan(check)["storage"]
    sc = find(storage, "StorageClass", "gpufabric-datasets")
    assert sc["provisioner"] == "nfs.csi.k8s.io"
    assert sc["mountOptions"] == ["vers=4.1", "proto=rdma", "port=20049", "nconnect=4"]
    assert sc["parameters"]["server"] == "172.16.0.200" and sc["parameters"]["share"] == "/export/datasets"
    assert sc["parameters"]["csi.storage.k8s.io/provisioner-secret-name"] == "gpufabric-datasets-mount-options"
    assert sc["parameters"]["csi.storage.k8s.io/provisioner-secret-namespace"] == "csi-driver-nfs"
    secret = find(storage, "Secret", "gpufabric-datasets-mount-options")
    assert secret["stringData"] == {"mountOptions": "vers=4.1,proto=rdma,port=20049,nconnect=4"}


def test_static_volumes_are_pinned_to_the_nodes_that_have_them(check):
    storage = cluster_plan(check)["storage"]
    lustre = find(storage, "PersistentVolume", "gpufabric-scratch")
    assert lustre["spec"]["csi"] == {
        "driver": "lustre-csi.hpe.com",
        "volumeHandle": "172.16.0.201@o2ib:/scratch",
        "fsType": "lustre",
    }
    assert lustre["spec"]["mountOptions"] == ["flock"]
    term = lustre["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "gpufabric.io/fs-scratch", "operator": "In", "values": ["true"]}
    blocks = find(storage, "PersistentVolume", "gpufabric-blocks")
    assert blocks["spec"]["csi"]["volumeAttributes"] == {
        "targetTrAddr": "172.16.0.202",
        "targetTrPort": "4420",
        "targetTrType": "rdma",
        "nqn": "nqn.2026-01.io.gpufabric.lab:blocks",
        "deviceID": "uuid.5f3c2d9e-8a41-4b6e-9c0d-1e2f3a4b5c6d",
    }
    assert blocks["spec"]["accessModes"] == ["ReadWriteOnce"] and blocks["spec"]["capacity"] == {"storage": "7Ti"}
    claim = find(storage, "PersistentVolumeClaim", "gpufabric-blocks")
    assert claim["spec"]["volumeName"] == "gpufabric-blocks" and claim["metadata"]["namespace"] == "default"
    assert blocks["spec"]["claimRef"]["name"] == "gpufabric-blocks"
    # the key prefixes node_labels owns: a filesystem or backend gone loses its label
    assert storage["node_label_owned"] == ["gpufabric.io/fs-*", "gpufabric.io/storage-*"]
    assert storage["node_labels"] == {
        node: {
            "gpufabric.io/fs-blocks": "true",
            "gpufabric.io/fs-checkpoints": "true",
            "gpufabric.io/fs-datasets": "true",
            "gpufabric.io/fs-models": "true",
            "gpufabric.io/fs-scratch": "true",
            "gpufabric.io/storage-gpfs": "true",
            "gpufabric.io/storage-lustre": "true",
            "gpufabric.io/storage-nfs": "true",
            "gpufabric.io/storage-nvmeof": "true",
            "gpufabric.io/storage-weka": "true",
        }
        for node in ("gpu-node-01", "gpu-node-02")
    }


def test_weka_and_scale(check):
    storage = cluster_plan(check)["storage"]
    weka = find(storage, "StorageClass", "gpufabric-checkpoints")
    assert weka["provisioner"] == "csi.weka.io"
    assert weka["parameters"]["volumeType"] == "dir/v1" and weka["parameters"]["filesystemName"] == "checkpoints"
    for kind in ("provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish"):
        assert weka["parameters"][f"csi.storage.k8s.io/{kind}-secret-name"] == "csi-wekafs-api-secret"
        assert weka["parameters"][f"csi.storage.k8s.io/{kind}-secret-namespace"] == "csi-wekafs"
    scale_sc = find(storage, "StorageClass", "gpufabric-models")
    assert scale_sc["parameters"] == {"volBackendFs": "models", "clusterId": "4200000000000000001"}
    cr = find(storage, "CSIScaleOperator", "ibm-spectrum-scale-csi")
    assert cr["metadata"]["namespace"] == "ibm-spectrum-scale-csi-driver"
    assert cr["spec"]["localScaleCluster"] == "4200000000000000001"
    assert cr["spec"]["clusters"] == [
        {
            "id": "4200000000000000001",
            "secrets": "models-gui",
            "secureSslMode": False,
            "restApi": [{"guiHost": "172.16.0.205"}],
        }
    ]
    assert cr["spec"]["pluginNodeSelector"] == [{"key": "gpufabric.io/storage-gpfs", "value": "true"}]
    assert "spectrumScale" not in cr["spec"], "without a mirror the operator's own image defaults stay"
    assert storage["crds"] == {"CSIScaleOperator": "csiscaleoperators.csi.ibm.com"}


def test_driver_installs_pinned_and_configurable(check):
    drivers = cluster_plan(check)["storage"]["drivers"]
    assert drivers["nfs"] == {
        "driver": "nfs.csi.k8s.io",
        "namespace": "csi-driver-nfs",
        "release_name": "csi-driver-nfs",
        "kind": "helm",
        "chart_repo_url": "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
        "chart_name": "csi-driver-nfs",
        "chart_version": "4.13.4",
        "chart_path": "",
        "chart_keyring": "",
        "values": {},
        "install": True,
    }
    assert drivers["lustre"]["chart_path"] == "/opt/lustre-csi-driver/charts/lustre-csi-driver"
    assert drivers["lustre"]["values"] == {
        "deployment": {"image": "ghcr.io/hewlettpackard/lustre-csi-driver", "tag": "0.1.11"}
    }
    assert drivers["weka"]["chart_version"] == "2.8.8" and drivers["weka"]["values"] == {}
    assert drivers["gpfs"]["kind"] == "manifest" and drivers["gpfs"]["images"] == {}
    assert drivers["nvmeof"]["images"] == {"nvmfplugin:latest": "registry.example.com/nvmfplugin:1.0"}


def test_air_gapped_mirror_takes_every_image(check):
    storage = cluster_plan(check, {"storage_csi_image_registry": "mirror.lab:5000/csi"})["storage"]
    drivers = storage["drivers"]
    assert drivers["nfs"]["values"] == {
        "image": {"baseRepo": "mirror.lab:5000/csi", "nfs": {"repository": "mirror.lab:5000/csi/sig-storage/nfsplugin"}}
    }
    assert drivers["weka"]["values"]["images"]["csidriver"] == "mirror.lab:5000/csi/weka.io/csi-wekafs"
    assert drivers["weka"]["values"]["images"]["provisionersidecar"] == (
        "mirror.lab:5000/csi/sig-storage/csi-provisioner:v6.2.0"
    )
    assert drivers["lustre"]["values"]["deployment"]["image"] == "mirror.lab:5000/csi/hewlettpackard/lustre-csi-driver"
    cr = find(storage, "CSIScaleOperator", "ibm-spectrum-scale-csi")
    driver = "mirror.lab:5000/csi/ibm-spectrum-scale/ibm-spectrum-scale-csi-driver@sha256:"
    assert cr["spec"]["spectrumScale"].startswith(driver)
    assert cr["spec"]["attacher"].startswith("mirror.lab:5000/csi/sig-storage/csi-attacher@sha256:")
    validate(cr)


def test_user_values_merge_over_the_generated_ones(check):
    changes = {
        "storage_csi_drivers": {
            **CSI_VARS["storage_csi_drivers"],
            "nfs": {"values": {"controller": {"replicas": 2}}},
            "gpfs": {
                **CSI_VARS["storage_csi_drivers"]["gpfs"],
                "values": {"kubeletRootDirPath": "/var/lib/k0s/kubelet"},
            },
        },
        "storage_csi_image_registry": "mirror.lab",
    }
    storage = cluster_plan(check, changes)["storage"]
    assert storage["drivers"]["nfs"]["values"]["controller"] == {"replicas": 2}
    assert storage["drivers"]["nfs"]["values"]["image"]["baseRepo"] == "mirror.lab"
    cr = find(storage, "CSIScaleOperator", "ibm-spectrum-scale-csi")
    assert cr["spec"]["kubeletRootDirPath"] == "/var/lib/k0s/kubelet"
    validate(cr)


def test_pods_host_and_none_make_no_csi_objects(check):
    intent = lab_variables()["gpufabric_storage"]
    host = [dict(fs, pods="host") if fs["backend"] != "nvmeof" else dict(fs, pods="none") for fs in intent]
    storage = cluster_plan(check, node_changes={"gpufabric_storage": host})["storage"]
    assert storage["drivers"] == {} and objects(storage) == []
    assert storage["node_labels"]["gpu-node-01"]["gpufabric.io/fs-datasets"] == "true"
    assert [fs["pods"] for fs in storage["filesystems"]] == ["none", "host", "host", "host", "host"]


def test_summary_names_filesystems_and_drivers(check):
    text = cluster_plan(check)["summary"]
    assert "  datasets (nfs) on 2 node(s), Pods: storageclass gpufabric-datasets" in text
    assert "  CSI nfs.csi.k8s.io (helm): https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs" in text


def test_two_scale_clusters_are_refused(check):
    intent = lab_variables()["gpufabric_storage"]
    extra = dict(intent[4], name="models2", export="models2", mount_point="/gpfs/m2", gpfs={"cluster_id": "7"})
    with pytest.raises(PlanError) as refused:
        cluster_plan(check, node_changes={"gpufabric_storage": [*intent, extra]})
    assert any("2 Scale clusters" in p and "4200000000000000001, 7" in p for p in refused.value.problems)


@pytest.mark.parametrize(
    ("image", "registry", "want"),
    [
        ("registry.k8s.io/sig-storage/livenessprobe:v2.18.0", "m.lab/x", "m.lab/x/sig-storage/livenessprobe:v2.18.0"),
        ("quay.io/weka.io/csi-wekafs", "m.lab", "m.lab/weka.io/csi-wekafs"),
        ("busybox:1.34.1", "m.lab", "m.lab/busybox:1.34.1"),
        ("localhost:5000/a/b:1", "m.lab", "m.lab/a/b:1"),
        ("nvmfplugin:latest", "", "nvmfplugin:latest"),
    ],
)
def test_mirrored(image, registry, want):
    assert _plan_storage_csi.mirrored(image, registry) == want


def test_manifest_images_are_rewritten():
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "csi-nvmf-node", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "node-registrar",
                            "image": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.6.2",
                        },
                        {"name": "csi-nvmf-plugin", "image": "nvmfplugin:latest", "env": [{"name": "X", "value": "y"}]},
                    ]
                }
            }
        },
    }
    out = _plan_storage_csi.rewrite_images([daemonset], {"nvmfplugin:latest": "reg.lab/nvmf:1.0"}, "mirror.lab")
    images = [c["image"] for c in out[0]["spec"]["template"]["spec"]["containers"]]
    assert images == ["mirror.lab/sig-storage/csi-node-driver-registrar:v2.6.2", "mirror.lab/nvmf:1.0"]
    assert daemonset["spec"]["template"]["spec"]["containers"][1]["image"] == "nvmfplugin:latest", "input untouched"
    operator = {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "operator",
                            "image": "quay.io/ibm-spectrum-scale/op@sha256:1",
                            "env": [{"name": "CSI_DRIVER_IMAGE", "value": "quay.io/ibm-spectrum-scale/drv@sha256:2"}],
                        }
                    ]
                }
            }
        },
    }
    out = _plan_storage_csi.rewrite_images([operator], {}, "mirror.lab")
    container = out[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "mirror.lab/ibm-spectrum-scale/op@sha256:1"
    assert container["env"][0]["value"] == "mirror.lab/ibm-spectrum-scale/drv@sha256:2"


def test_csi_filesystems_without_the_storage_csi_role_are_refused(check):
    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        values, problems = check("node", lab_variables(gpufabric_k8s_node_name=name))
        assert problems == []
        records[name] = _node_records.node_record(
            _plan_node.plan_node(values, node_facts(index)), node_facts(index)["topology"]
        )
    problems = []
    assert _plan_storage_csi.plan({}, records, "gpufabric.io", problems) is None
    assert [p.split("'")[1] for p in problems] == ["blocks", "checkpoints", "datasets", "models", "scratch"]
    assert all("storage_csi is not in plan_cluster_roles" in p and "pods: host or none" in p for p in problems)


def test_drivers_an_administrator_installs_need_no_source(check):
    with pytest.raises(PlanError) as refused:
        cluster_plan(check, {"storage_csi_drivers": {}})
    assert [p.split(":")[0] for p in refused.value.problems] == [
        "storage_csi_drivers.lustre.chart_path",
        "storage_csi_drivers.gpfs.manifest",
        "storage_csi_drivers.nvmeof.manifest",
        "storage_csi_drivers.nvmeof.image",
    ]
    plan = cluster_plan(check, {"storage_csi_drivers": {}, "storage_csi_install_drivers": False})
    storage = plan["storage"]
    assert sorted(storage["drivers"]) == ["gpfs", "lustre", "nfs", "nvmeof", "weka"]
    assert not any(d["install"] for d in storage["drivers"].values())
    assert "  CSI nfs.csi.k8s.io (helm): installed by the cluster administrator" in plan["summary"]
    assert storage["drivers"]["nfs"]["namespace"] == "csi-driver-nfs", "the NFS Secrets still go to its namespace"
    assert len(objects(storage)) == len(objects(cluster_plan(check)["storage"]))


def test_every_object_is_owned_by_storage_csi_so_that_a_replan_prunes_what_left(check):
    """The objects carry storage_csi's owner labels; a replan without the NFS and Lustre filesystems leaves
    exactly their StorageClass, mount-options Secret, volume and claim to prune, and the Secret is listed in
    the NFS driver's namespace only."""
    storage = cluster_plan(check)["storage"]
    for obj in objects(storage):
        labels = obj["metadata"]["labels"]
        assert labels[_k8s_publish.MANAGED_BY_KEY] == "gpufabric.rollout", obj["metadata"]["name"]
        assert labels[_k8s_publish.COMPONENT_KEY] == "storage_csi", obj["metadata"]["name"]
    assert storage["secret_prune_kinds"] == [
        {"api_group": "", "version": "v1", "resources": ["secrets"], "namespace": "csi-driver-nfs"}
    ]
    kept = [fs for fs in lab_variables()["gpufabric_storage"] if fs["name"] not in ("datasets", "scratch")]
    replanned = cluster_plan(check, node_changes={"gpufabric_storage": kept})["storage"]
    # what the API server returns for the first plan's objects, and one object of someone else's
    found = [dict(o, metadata=dict(o["metadata"], uid=str(i))) for i, o in enumerate(objects(storage))]
    secret = "gpufabric-datasets-mount-options"
    assert _k8s_publish.stale(found, objects(replanned), "lab") == [
        {"api_version": "v1", "kind": "PersistentVolume", "namespace": "", "name": "gpufabric-scratch"},
        {"api_version": "v1", "kind": "PersistentVolumeClaim", "namespace": "default", "name": "gpufabric-scratch"},
        {"api_version": "v1", "kind": "Secret", "namespace": "csi-driver-nfs", "name": secret},
        {"api_version": "storage.k8s.io/v1", "kind": "StorageClass", "namespace": "", "name": "gpufabric-datasets"},
    ]
    # the Secret's namespace is still listed once no NFS filesystem is planned
    assert replanned["secret_prune_kinds"] == storage["secret_prune_kinds"]
    # every kind the role can create is one of the kinds it prunes (vars/main.yml)
    prune = yaml.safe_load((UNIT.parents[1] / "roles/storage_csi/vars/main.yml").read_text())["__storage_csi_prune"]
    assert storage["claim_prune_kinds"] == [
        {"api_group": "", "version": "v1", "resources": ["persistentvolumeclaims"], "namespace": "default"}
    ]
    queries = _k8s_publish.prune_queries(prune + storage["claim_prune_kinds"] + storage["secret_prune_kinds"])
    resources = {(q["api_version"].rpartition("/")[0], q["kind"]) for q in queries}
    made = set()
    for o in objects(storage):
        group = o["apiVersion"].rpartition("/")[0]
        builtin = _k8s_access.BUILTIN_RESOURCES.get((group, o["kind"]))
        resource = builtin or _k8s_access.CRD_NAMES[o["kind"]].split(".")[0]
        made.add((group, resource))
    assert made <= resources, made - resources


def test_the_kustomization_names_no_repo_for_a_chart_verified_against_its_keyring():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi

    def driver(key, **value):
        base = {"chart_name": f"{key}-chart", "chart_version": "1.0", "chart_repo_url": "https://charts.invalid"}
        return {"key": key, "value": dict(base, release_name=key, namespace="kube-system", chart_path="", **value)}

    doc = _plan_storage_csi.kustomization(
        [driver("nfs", chart_keyring="/etc/keys/nfs.gpg"), driver("weka", chart_keyring=""), driver("other")],
        [{"file": "sc.yaml"}],
    )

    charts = {c["releaseName"]: c for c in doc["helmCharts"]}
    assert list(charts["nfs"]) == ["name", "version", "releaseName", "namespace", "includeCRDs", "valuesFile"]
    assert charts["weka"]["repo"] == charts["other"]["repo"] == "https://charts.invalid"
