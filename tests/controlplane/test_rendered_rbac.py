"""Issue 37, point 2: the RBAC rendered for a plan with other namespaces than the defaults
(plugins/module_utils/plan/rbac.py, what playbooks/rbac.yml writes), applied as written on a private
lab control plane (a real kube-apiserver) for a ServiceAccount subject. As that identity
(SelfSubjectAccessReview through `kubectl auth can-i`, impersonated by the lab's administrator) it
writes the NCCL ConfigMaps, Jobs and claims in the plan's namespaces and nowhere else, and the
admission policies match its requests (not the shipped user's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from controlplane_support import NODES, private_cluster

from ansible_collections.gpufabric.rollout.plugins.filter import rbac as _filter
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _rbac

REPO = Path(__file__).resolve().parents[2]
IMAGE = yaml.safe_load((REPO / "roles" / "validate" / "defaults" / "main.yml").read_text())["validate_nccl_image"]
SUBJECT = {"kind": "ServiceAccount", "name": "gpufabric-ci", "namespace": "ops"}
AS = "--as=system:serviceaccount:ops:gpufabric-ci"
PLAN = {
    "subject": SUBJECT,
    "job_image": IMAGE,
    "operator_namespaces": {"network_operator": "netop", "gpu_operator": "gpuop"},
    "nad_namespaces": ["ml-rails"],
    "validate_namespaces": ["ml-checks"],
    "secret_namespaces": ["nfs-secrets"],
    "claim_namespaces": ["default", "ml-data"],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with private_cluster(
        tmp_path_factory.mktemp("kube"), tmp_path_factory.mktemp("sysroots"), dict(list(NODES.items())[:1])
    ) as c:
        # the file as playbooks/rbac.yml writes it, applied as an administrator applies it; the lab
        # applied the shipped rendering (the user gpufabric-rollout) first, and this one takes over
        # the objects of the same names (the bindings' subjects, the policies' matchConditions)
        path = c.state / "gpufabric-rollout-rbac.yaml"
        path.write_text(_filter.rbac_yaml(_rbac.manifest(PLAN), ["rendered for test_rendered_rbac"]))
        c.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        yield c


def _can(cluster, verb: str, resource: str, namespace: str) -> bool:
    done = cluster.kubectl("auth", "can-i", verb, resource, "-n", namespace, AS, check=False)
    assert done.stdout.strip() in ("yes", "no"), done.stderr
    return done.stdout.strip() == "yes"


@pytest.mark.parametrize("verb", ["create", "patch", "delete", "list"])
def test_configmaps_in_the_plans_nad_namespace_only(cluster, verb):
    assert _can(cluster, verb, "configmaps", "ml-rails")
    # (the network operator's namespace has the chart's ConfigMap in its Helm Role; the GPU Operator's not)
    for namespace in ("default", "kube-system", "gpuop", "nvidia-network-operator"):
        assert not _can(cluster, verb, "configmaps", namespace), namespace


def test_jobs_claims_and_secrets_in_their_namespaces_only(cluster):
    assert _can(cluster, "create", "jobs.batch", "ml-checks")
    for namespace in ("ml-rails", "default"):  # not in the NADs' namespace, nor the shipped file's
        assert not _can(cluster, "create", "jobs.batch", namespace), namespace
        assert not _can(cluster, "create", "secrets", namespace), namespace
    for namespace in ("ml-data", "default"):
        assert _can(cluster, "delete", "persistentvolumeclaims", namespace)
    assert not _can(cluster, "create", "persistentvolumeclaims", "ml-rails")
    assert _can(cluster, "patch", "secrets", "nfs-secrets")
    assert not _can(cluster, "patch", "secrets", "csi-driver-nfs")
    assert not _can(cluster, "get", "secrets", "kube-system")


def test_cluster_wide_grants_follow_the_subject(cluster):
    assert _can(cluster, "patch", "nodes", "default")
    assert not _can(cluster, "patch", "namespaces", "default")
    done = cluster.kubectl("auth", "can-i", "create", "configmaps", "--all-namespaces", AS, check=False)
    assert done.stdout.strip() == "no"


def test_the_admission_policies_match_the_subjects_requests(cluster):
    def create(labels):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nccl-env", "namespace": "ml-rails"}}
        if labels:
            cm["metadata"]["labels"] = labels
        path = cluster.state / "cm.json"
        path.write_text(json.dumps(cm))
        return cluster.kubectl("create", "-f", str(path), AS, check=False)

    refused = create(None)
    assert refused.returncode != 0 and "carry the collection's labels" in refused.stderr, refused.stderr
    admitted = create({"app.kubernetes.io/managed-by": "gpufabric.rollout"})
    assert admitted.returncode == 0, admitted.stderr
