# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grants of the rollout identity's RBAC (plan/rbac.py renders them): the names and APIs, the
CRDs the collection installs, the cluster-wide rules, the rules per Helm release and per namespaced
concern (validate, storage, networks, claims), the default inputs, and object metadata.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _network_objects
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _storage_csi

NAME = "gpufabric-rollout"
PART_OF = {"app.kubernetes.io/part-of": NAME}
RBAC_API = "rbac.authorization.k8s.io"
ADMISSION_API = "admissionregistration.k8s.io/v1"
SUBJECT_KINDS = ("User", "Group", "ServiceAccount")
# Namespaces every cluster has: bound in, never made here.
BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ALL_VERBS = ["get", "list", "create", "patch", "delete"]

# The CRDs the collection installs (network_operator_crds_dir: the network kinds the plan emits;
# gpu_operator_crds_dir: the GPU Operator's, plan/gpu_operator.py, with the GPUCluster and the GPU
# DRA driver's ComputeDomain kinds in gpufabric_k8s_device_allocation dra mode): the only ones the ClusterRole
# lets the identity patch (resourceNames) and the gpufabric-rollout-kinds policy lets it create.
GPU_OPERATOR_CRDS = (
    "clusterpolicies.nvidia.com",
    "nvidiadrivers.nvidia.com",
    "gpuclusters.nvidia.com",
    "computedomains.resource.nvidia.com",
    "computedomaincliques.resource.nvidia.com",
)
COLLECTION_CRDS = tuple(_network_objects.CRD_NAMES.values()) + GPU_OPERATOR_CRDS

# What must be cluster-wide (ClusterRole gpufabric-rollout). The patch of CRDs by name follows the
# first rule (``manifest``: the names come from the inputs).
CLUSTER_RULES: Tuple[Dict[str, Any], ...] = (
    # The CRDs the collection installs: read, created, and patched by name only. RBAC cannot narrow
    # `create` by name (the gpufabric-rollout-kinds admission policy admits only those names); every
    # role waits for its CRDs to be Established (get).
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "create"]},
    # Node labels (network_operator, gpu_operator, rdma_networks, storage_csi); cordon, uncordon and
    # the maintenance annotations (node_maintenance); the upgrade's plan lists the Nodes to find
    # those a failed run left cordoned.
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    # The namespaces of pools, NADs and NCCL ConfigMaps (rdma_networks), of the storage claims
    # (storage_csi), and the operator's (Helm's --create-namespace, network_operator): read, and
    # created when missing; never patched (an existing namespace is left as it is). The
    # gpufabric-rollout-kinds policy refuses Pod Security labels on a namespace this identity creates.
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "create"]},
    # The drain (node_maintenance): the node's Pods in every namespace (RBAC cannot narrow a list by
    # field selector), evicted through the eviction API, which honours PodDisruptionBudgets; then
    # watched until gone; the budgets read to name what blocks.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    # NicClusterPolicy / NicNodePolicies (network_operator). Every kind below is also listed by the
    # labels of what the collection made, and deleted when it left the plan (pruning).
    {"apiGroups": ["mellanox.com"], "resources": ["nicclusterpolicies", "nicnodepolicies"], "verbs": ALL_VERBS},
    # Per-rail IP pools (rdma_networks, nv-ipam).
    {"apiGroups": ["nv-ipam.nvidia.com"], "resources": ["ippools", "cidrpools"], "verbs": ALL_VERBS},
    # Per-rail NetworkAttachmentDefinitions (rdma_networks).
    {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["network-attachment-definitions"], "verbs": ALL_VERBS},
    # The DeviceClasses of gpufabric_k8s_device_allocation: dra (rdma_networks, plan/dra.py): applied,
    # listed by their labels and deleted when they left the plan (back to device_plugin). Their names
    # are fixed, but RBAC cannot narrow create or list by name; the gpufabric-rollout-owned policy
    # admits changes and deletes only of those carrying the collection's labels, so the drivers' own
    # DeviceClasses are never touched.
    {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ALL_VERBS},
    # A node whose device allocation moves (playbooks/upgrade.yml, plan/allocation_migration.py) is
    # uncordoned only once the DRA drivers publish its devices: its ResourceSlices are listed by
    # spec.nodeName (RBAC cannot narrow a list by field selector). Read only.
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
    # The ClusterPolicy the GPU Operator chart renders (Helm, gpu_operator) and the NVIDIADrivers the
    # role applies, lists by its label and prunes.
    {"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": ["nvidia.com"], "resources": ["nvidiadrivers"], "verbs": ALL_VERBS},
    # In gpufabric_k8s_device_allocation dra mode the chart renders the GPUCluster instead of the
    # ClusterPolicy (Helm, gpu_operator), read back for readiness.
    {"apiGroups": ["nvidia.com"], "resources": ["gpuclusters"], "verbs": ["get", "create", "patch", "delete"]},
    # The SR-IOV path (sriov_networks).
    {
        "apiGroups": ["sriovnetwork.openshift.io"],
        "resources": ["sriovnetworknodepolicies", "sriovnetworks", "sriovnetworkpoolconfigs"],
        "verbs": ALL_VERBS,
    },
    # The filesystems' StorageClasses and static PersistentVolumes, and the IBM Storage Scale
    # CSIScaleOperator (storage_csi), listed by their labels and deleted when they left the plan.
    # Their names come from gpufabric_storage, so RBAC names none of them: the
    # gpufabric-rollout-owned policy admits writes and deletes by this identity only on objects that
    # carry the collection's label, and gpufabric-rollout-kinds only CSI volumes and StorageClasses of
    # the collection's drivers (no hostPath). The CSI drivers themselves are installed by an
    # administrator (storage_csi_install_drivers: false).
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ALL_VERBS},
    {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ALL_VERBS},
    {"apiGroups": ["csi.ibm.com"], "resources": ["csiscaleoperators"], "verbs": ALL_VERBS},
)

# The Helm release of each operator chart, in the operator's namespace only: Helm keeps each
# release revision in a Secret there; and the namespaced objects of the chart as the lab's stand-in
# charts have them (network_operator: a ServiceAccount, a ConfigMap, the operator's Deployment;
# gpu_operator: two ServiceAccounts and the operator's Deployment, its ClusterPolicy and NVIDIADriver
# granted cluster-wide). The real charts install more, cluster-scoped RBAC among it, which
# Kubernetes lets only an identity create that holds every permission it grants (or
# `bind`/`escalate`), in practice an administrator: see docs/rbac/README.md.
_HELM_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "update", "delete"]}
_CHART_VERBS = ["get", "create", "patch", "delete"]
HELM_RULES: Dict[str, Tuple[Dict[str, Any], ...]] = {
    "network_operator": (
        _HELM_SECRETS,
        {"apiGroups": [""], "resources": ["serviceaccounts", "configmaps"], "verbs": _CHART_VERBS},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _CHART_VERBS},
    ),
    "gpu_operator": (
        _HELM_SECRETS,
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": _CHART_VERBS},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _CHART_VERBS},
        # Readiness read-back of the operands when the ClusterPolicy is not ready.
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list"]},
    ),
    # gpufabric_k8s_device_allocation: dra: dranet, the rail NICs' DRA driver (network_operator,
    # plan/dranet.py), in its own namespace: the release records, and the chart's ServiceAccount and
    # DaemonSet as the lab's stand-in chart has them, the DaemonSet also listed for readiness. The real
    # chart's ClusterRole and ClusterRoleBinding are an administrator's (docs/rbac/README.md).
    "dranet": (
        _HELM_SECRETS,
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": _CHART_VERBS},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": [*_CHART_VERBS, "list"]},
    ),
}
# The role whose variables carry each release's namespace (default: the release's own name).
HELM_NAMESPACE_VARS = {"dranet": "network_operator_dranet_namespace"}
HELM_ROLES = {"dranet": "network_operator"}
# NCCL across the nodes in Pods (validate): one Job per node group with its headless Service and the
# Secret of the run's SSH key pair, applied, read (where the Pods ran, the launcher Pod's log) and
# deleted, in validate_namespace only: a namespace of their own, apart from the NADs' (the Pods
# attach the NADs across namespaces and carry the NCCL environment inline, proof/jobs.py). With
# gpufabric_k8s_device_allocation: dra, each Job's copy of its node group's full-node
# ResourceClaimTemplate there too (a Pod names a template of its own namespace only), owned by the Job.
VALIDATE_RULES: Tuple[Dict[str, Any], ...] = (
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": ["get", "create", "patch", "delete"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaimtemplates"],
        "verbs": ["get", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
)
# The StorageClasses' mount-options Secrets (storage_csi), which the NFS driver reads when it
# deletes a volume, listed by their labels in these namespaces only and deleted when they left the plan.
STORAGE_RULES: Tuple[Dict[str, Any], ...] = ({"apiGroups": [""], "resources": ["secrets"], "verbs": ALL_VERBS},)
# The NCCL environment ConfigMaps per node group (rdma_networks), in the NADs' namespace; listed by
# their labels there only, and deleted when they left the plan. With gpufabric_k8s_device_allocation:
# dra, the node groups' ResourceClaimTemplates (plan/dra.py) there too, the same way. A ClusterRole
# bound by a RoleBinding in that namespace only (never cluster-wide).
NETWORKS_RULES: Tuple[Dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_VERBS},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaimtemplates"], "verbs": ALL_VERBS},
)
# The static volumes' claims (storage_csi), in the namespaces gpufabric_storage names for them;
# listed by their labels there only, and deleted when they left the plan and no Pod uses them.
CLAIMS_RULES: Tuple[Dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ALL_VERBS},
)

# The default plan: the namespaces every role uses unless the inventory names others.
DEFAULT_INPUTS: Dict[str, Any] = {
    "subject": {"kind": "User", "name": NAME},
    "operator_namespaces": {
        "network_operator": "nvidia-network-operator",
        "gpu_operator": "gpu-operator",
        "dranet": "dranet",
    },
    "nad_namespaces": ["default"],
    "validate_namespaces": ["gpufabric-validation"],
    "secret_namespaces": ["csi-driver-nfs"],
    "claim_namespaces": [_storage_csi.CLAIM_NAMESPACE],
    "crds": list(COLLECTION_CRDS),
    # validate_nccl_image (roles/validate/defaults/main.yml); None: the caller must give it
    "job_image": None,
}


def _meta(name: str, namespace: Optional[str] = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(PART_OF)
    return meta
