# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL across nodes in Pods: the Job set the validate role runs, from the cluster plan.

One Job per node group of ``gpufabric_plan.network`` with at least two of its nodes in the run:

* an Indexed ``batch/v1`` Job, one Pod per node (required node affinity to the nodes, required
  anti-affinity between its Pods), each Pod asking for every GPU of the node and one of every
  rail's RDMA resource, attached to the rails' NetworkAttachmentDefinitions (Multus
  ``k8s.v1.cni.cncf.io/networks``, ``<NAD namespace>/<NAD>``), with the group's NCCL environment
  inline (``env``: the keys and values of the NCCL ConfigMap training Pods use, from the plan's
  ``network["nccl"][group]``, so that nothing is read from the NADs' namespace). Pod 0 is the
  launcher: it starts ``mpirun`` over SSH to the Pods' stable names (the Job's ``subdomain``),
  which runs ``all_reduce_perf`` with one rank per GPU; the other Pods only serve SSH.
  ``successPolicy`` ends the Job when Pod 0 succeeds;
* a headless Service that gives the Pods their DNS names;
* in ``dra`` mode (``gpufabric_k8s_device_allocation: dra``, the plan's ``dra`` section), instead of
  the GPU and rail resources and the NAD annotation: one resource claim per Pod from the node
  group's full-node ResourceClaimTemplate (plan/dra.py: every GPU with a rail NIC of its PCIe
  root), copied into the Job's namespace under the Job's name and owned by the Job (a Pod names a
  template of its own namespace only: docs/facts.md, "DRA drivers: names and device attributes").
  dra.net moves each rail NIC's interface and RDMA device into the Pod under their host names
  (plan/dra.py ``delivered``), so the GID-index step reads the first rail's interface by that name;
* a Secret with the SSH key pair of this run (made by ``ssh_keypair``) and, for NCCL before 2.21,
  the GID-index script (the plan's ``nccl-gid-index`` ConfigMap's script, mounted where the NCCL
  environment's ``GPUFABRIC_NCCL_GID_SCRIPT`` names it).

All three live in ``options["namespace"]`` (``validate_namespace``), a namespace of their own: the
identity may create Jobs there only, and the ``gpufabric-rollout-jobs`` admission policy admits a
Job there only, with the planned image and securityContext (docs/rbac/README.md).

The Job is created suspended (``spec.suspend``, Kubernetes "Job suspension"): no Pod starts before
its Secret and Service exist. Both are owned by the Job (``owned_by``: ``metadata.ownerReferences``
with the Job's UID), so whatever ends the Job ends them: the role's ``always:`` cleanup, a delete
by hand, or ``ttlSecondsAfterFinished`` when the run was interrupted (the garbage collector deletes
the dependents of a deleted owner; Kubernetes "Owners and Dependents"). ``resume`` is the patch that
lets the Job start.

The nccl-tests multi-node launch needs MPI (NVIDIA/nccl-tests README, "NCCL tests rely on MPI to
work on multiple processes"); the Job reproduces what an MPIJob's launcher and workers do without
needing an operator. proof/job_results.py turns what the cluster reports back (the Job's conditions,
where its Pods ran) into report checks. Pure; no Ansible imports (``cryptography`` is imported by
``ssh_keypair`` only).
"""

from __future__ import annotations

import base64
import copy
import re
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource (GPU Operator)
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NAME_PREFIX = "gpufabric-nccl-"
CLAIM = "sets"  # the Pod's one resource claim in dra mode: every rail set of its node
MULTUS_FIRST_RAIL = "net1"  # Multus names the first attachment net1 (device_plugin mode)
SSH_DIR = "/etc/gpufabric-ssh"
GID_DIR = "/opt/gpufabric"
GID_SCRIPT_KEY = "find-gid-index.sh"
LABELS = {"app.kubernetes.io/name": "gpufabric-nccl-tests", "app.kubernetes.io/part-of": "gpufabric-rollout"}
_SIZE = re.compile(r"^[0-9]+[KMG]?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class JobPlanError(ValueError):
    """The cluster plan cannot give a Job set (the message names what is missing)."""


def job_name(group: str) -> str:
    """``gpufabric-nccl-<group>``, cut so that Pod host names (``<job>-<index>``) stay DNS labels."""
    name = re.sub(r"[^a-z0-9-]+", "-", (NAME_PREFIX + group).lower()).strip("-")
    return name[:52].rstrip("-")


def ssh_keypair() -> Tuple[str, str]:
    """A new Ed25519 key pair in OpenSSH formats: (private key, public key line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode("ascii") + " gpufabric-nccl-tests\n"


def test_args(options: Mapping[str, Any]) -> List[str]:
    """all_reduce_perf's arguments: sizes doubling from min to max, one GPU per rank, results checked."""
    sizes = ["-b", str(options["min_bytes"]), "-e", str(options["max_bytes"]), "-f", "2"]
    return [*sizes, "-g", "1", "-n", str(options["iters"]), "-c", "1"]


def launcher_script(
    name: str,
    nodes: int,
    gpus: int,
    env_keys: Sequence[str],
    options: Mapping[str, Any],
    gid_script: bool,
    first_rail: str = MULTUS_FIRST_RAIL,
) -> str:
    """The Pods' command: SSH server everywhere; on Pod 0, wait for every Pod, then mpirun."""
    port = int(options["ssh_port"])
    exports = " ".join(f"-x {k}" for k in [*sorted(env_keys), "LD_LIBRARY_PATH", "PATH"])
    args = " ".join(shlex.quote(a) for a in [str(options["binary"]), *test_args(options)])
    lines = [
        "set -eu",
        "mkdir -p /root/.ssh /run/sshd && chmod 700 /root/.ssh",
        f"install -m 600 {SSH_DIR}/id_ed25519 /root/.ssh/id_ed25519",
        f"install -m 600 {SSH_DIR}/authorized_keys /root/.ssh/authorized_keys",
        f"printf 'Host *\\n  Port {port}\\n  StrictHostKeyChecking no\\n  UserKnownHostsFile /dev/null\\n"
        "  LogLevel ERROR\\n' > /root/.ssh/config",
        "ssh-keygen -A >/dev/null",
        f"/usr/sbin/sshd -p {port}",
    ]
    if gid_script:
        # NCCL before 2.21 needs the RoCE v2 GID index; each Pod finds its own on its first rail
        # interface and NCCL reads it from /etc/nccl.conf.
        lines.append(f"sh {GID_DIR}/{GID_SCRIPT_KEY} {shlex.quote(first_rail)} /etc/nccl.conf >/dev/null")
    lines += [
        'if [ "${JOB_COMPLETION_INDEX}" != 0 ]; then exec sleep infinity; fi',
        'hosts=""',
        f"for i in $(seq 0 {nodes - 1}); do",
        f'  h="{name}-${{i}}.{name}"',
        '  until getent hosts "$h" >/dev/null && ssh -o ConnectTimeout=5 "$h" true; do sleep 2; done',
        f'  hosts="${{hosts}},${{h}}:{gpus}"',
        "done",
        f'exec mpirun --allow-run-as-root --bind-to none -np {nodes * gpus} -H "${{hosts#,}}" {exports} {args}',
    ]
    return "\n".join(lines) + "\n"


def _group(network: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for group in network.get("node_groups") or []:
        if group.get("name") == name:
            return group
    raise JobPlanError(f"node group {name!r} is not in the cluster plan")


def _gid_script(network: Mapping[str, Any]) -> Optional[str]:
    """The GID-index script of the plan's ConfigMap (rdma_networks), copied into the Job's Secret."""
    for obj in (network.get("objects") or {}).get("rdma_networks") or []:
        if obj.get("kind") == "ConfigMap" and GID_SCRIPT_KEY in (obj.get("data") or {}):
            return str(obj["data"][GID_SCRIPT_KEY])
    return None


def _group_inputs(
    network: Mapping[str, Any], group_name: str, options: Mapping[str, Any]
) -> Tuple[str, List[Mapping[str, Any]], Dict[str, str], int, Optional[str]]:
    """What the node group's Job is made of, checked: the namespace, the group's rails, its NCCL
    environment, its GPUs per node and the GID-index script when its NCCL needs one."""
    group = _group(network, group_name)
    namespace = options.get("namespace")
    if not (isinstance(namespace, str) and _DNS_LABEL.match(namespace)):
        raise JobPlanError(f"validate_namespace: {namespace!r} is not a namespace (a DNS label)")
    rails = [r for r in network.get("rails") or [] if group_name in (r.get("node_groups") or [])]
    if not rails:
        raise JobPlanError(f"node group {group_name!r} has no rail in the cluster plan")
    env = {str(k): str(v) for k, v in ((network.get("nccl") or {}).get(group_name) or {}).items()}
    if not env:
        raise JobPlanError(f"node group {group_name!r} has no NCCL environment in the cluster plan")
    gpus = int(group.get("gpu_count") or 0)
    if gpus < 1:
        raise JobPlanError(f"node group {group_name!r} has no GPU")
    gid = _gid_script(network) if "GPUFABRIC_NCCL_GID_SCRIPT" in env else None
    if "GPUFABRIC_NCCL_GID_SCRIPT" in env and gid is None:
        raise JobPlanError(f"node group {group_name!r} needs the GID-index script, which the cluster plan lacks")
    return namespace, rails, env, gpus, gid


def _pod_storage(name: str, gid: Optional[str]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """The Pods' volume mounts and volumes: the SSH key pair (and the GID-index script) from the Job's
    own Secret, and a memory-backed /dev/shm."""
    mounts = [
        {"name": "ssh", "mountPath": SSH_DIR, "readOnly": True},
        {"name": "shm", "mountPath": "/dev/shm"},
    ]
    ssh_items = [{"key": k, "path": k} for k in ("id_ed25519", "authorized_keys")]
    volumes: List[Dict[str, Any]] = [
        {"name": "ssh", "secret": {"secretName": name + "-ssh", "defaultMode": 0o400, "items": ssh_items}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
    ]
    if gid:
        # the script travels in the Job's own Secret: nothing is read from the NADs' namespace
        mounts.append({"name": "gid", "mountPath": GID_DIR, "readOnly": True})
        gid_items = [{"key": GID_SCRIPT_KEY, "path": GID_SCRIPT_KEY}]
        volumes.append(
            {"name": "gid", "secret": {"secretName": name + "-ssh", "defaultMode": 0o400, "items": gid_items}}
        )
    return mounts, volumes


def _placement(name: str, nodes: Sequence[str]) -> Dict[str, Any]:
    """One Pod on each of ``nodes``, never two on one node."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(nodes)}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {JOB_NAME_LABEL: name}}, "topologyKey": HOSTNAME_LABEL}
            ]
        },
    }


def claim_template(
    dra: Mapping[str, Any], group_name: str, name: str, namespace: str, labels: Mapping[str, str]
) -> Tuple[Dict[str, Any], List[Mapping[str, Any]]]:
    """The node group's full-node ResourceClaimTemplate of the plan's dra section, copied into the
    Job's namespace as ``name``, and what its claim delivers per rail (plan/dra.py ``delivered``)."""
    group = next((g for g in dra.get("groups") or [] if g.get("name") == group_name), None)
    if not group or not group.get("templates"):
        raise JobPlanError(f"gpufabric_k8s_device_allocation: dra, but node group {group_name!r} has no claim template")
    full = max(group["templates"], key=lambda t: int(t["sets"]))
    planned = next(
        (
            o
            for o in dra.get("objects") or []
            if o.get("kind") == "ResourceClaimTemplate" and (o.get("metadata") or {}).get("name") == full["name"]
        ),
        None,
    )
    if planned is None:
        raise JobPlanError(f"node group {group_name!r}: claim template {full['name']} is not in the cluster plan")
    rails = list(group.get("rails") or [])
    if not rails:
        raise JobPlanError(f"node group {group_name!r}: the cluster plan's dra section names no rail NIC")
    template = {
        "apiVersion": planned["apiVersion"],
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": copy.deepcopy(planned["spec"]),
    }
    return template, rails


def _service(name: str, namespace: str, labels: Mapping[str, str], options: Mapping[str, Any]) -> Dict[str, Any]:
    """The headless Service that gives each Pod of the Job its DNS name (the launcher's SSH targets)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {JOB_NAME_LABEL: name},
            "ports": [{"name": "ssh", "port": int(options["ssh_port"]), "targetPort": "ssh"}],
        },
    }


def job_for_group(
    network: Mapping[str, Any],
    group_name: str,
    nodes: Sequence[str],
    options: Mapping[str, Any],
    hosts: Optional[Mapping[str, str]] = None,
    dra: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The Job, its Service and the name of its Secret for one node group on ``nodes`` (Node names;
    ``hosts`` maps them to inventory names), in ``options["namespace"]``. With the device plugins the
    Pods attach the NADs of the NADs' namespace and ask for the GPUs and rail resources; with ``dra``
    (the plan's dra section) they claim the group's full-node template, copied next to the Job."""
    namespace, rails, env, gpus, gid = _group_inputs(network, group_name, options)
    config = network.get("config") or {}
    nad_namespace = config.get("nad_namespace") or "default"
    name = job_name(group_name)
    label_prefix = config.get("label_prefix") or "gpufabric.io"
    labels = dict(LABELS, **{f"{label_prefix}/node-group": group_name})
    mounts, volumes = _pod_storage(name, gid)
    pod_meta: Dict[str, Any] = {"labels": labels}
    pod_claims: Dict[str, Any] = {}
    if dra:
        template, delivered = claim_template(dra, group_name, name, namespace, labels)
        first_rail = str(delivered[0]["netdev"])
        resources: Dict[str, Any] = {"claims": [{"name": CLAIM}]}
        pod_claims["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": name}]
    else:
        template, first_rail = None, MULTUS_FIRST_RAIL
        pod_meta["annotations"] = {
            NETWORKS_ANNOTATION: ",".join(
                f"{nad_namespace}/{(r.get('nad_by_group') or {}).get(group_name, r['name'])}" for r in rails
            )
        }
        limits = {GPU_RESOURCE: str(gpus)}
        limits.update({r["resource"]: "1" for r in rails})
        resources = {"limits": dict(limits), "requests": dict(limits)}
    script = launcher_script(name, len(nodes), gpus, list(env), options, gid is not None, first_rail)
    spec: Dict[str, Any] = {
        "completions": len(nodes),
        "parallelism": len(nodes),
        "completionMode": "Indexed",
        "successPolicy": {"rules": [{"succeededIndexes": "0"}]},
        "backoffLimit": 0,
        "suspend": True,  # resumed once its owned Secret, Service (and claim template) exist
        "activeDeadlineSeconds": int(options["timeout"]),
        "template": {
            "metadata": pod_meta,
            "spec": {
                "restartPolicy": "Never",
                "subdomain": name,
                "affinity": _placement(name, nodes),
                **pod_claims,
                "containers": [
                    {
                        "name": "nccl-tests",
                        "image": options["image"],
                        "command": ["/bin/bash", "-c", script],
                        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                        "ports": [{"name": "ssh", "containerPort": int(options["ssh_port"])}],
                        "resources": resources,
                        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                        "volumeMounts": mounts,
                    }
                ],
                "volumes": volumes,
            },
        },
    }
    if not options.get("keep_jobs"):
        spec["ttlSecondsAfterFinished"] = 3600  # a safety net: the role deletes the Job once read
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }
    return {
        "group": group_name,
        "name": name,
        "namespace": namespace,
        "nodes": list(nodes),
        "hosts": [(hosts or {}).get(n, n) for n in nodes],
        "gpus": gpus,
        "env": env,
        "args": test_args(options),
        # the claim template last: the role applies it, owned by the Job, before it resumes the Job
        "objects": [_service(name, namespace, labels, options), job] + ([template] if template else []),
        "secret": name + "-ssh",
        "gid_script": gid,
    }


def job_set(
    network: Mapping[str, Any],
    hosts: Mapping[str, str],
    options: Mapping[str, Any],
    dra: Optional[Mapping[str, Any]] = None,
) -> Dict[str, List[Any]]:
    """``{"jobs": [...], "skipped": [reason, ...]}`` for the nodes of this run (``hosts``: Node name ->
    inventory name): one Job per node group with two or more of them (an all-reduce across nodes
    needs two). ``dra``: the plan's dra section, None with the device plugins."""
    for key in ("min_bytes", "max_bytes"):
        if not _SIZE.match(str(options.get(key))):
            raise JobPlanError(f"{key}: {options.get(key)!r} is not a size like 1M or 8G")
    in_run = set(hosts)
    jobs: List[Dict[str, Any]] = []
    skipped: List[str] = []
    for group in network.get("node_groups") or []:
        members = [n for n in group.get("nodes") or [] if n in in_run]
        if len(members) < 2:
            skipped.append(
                f"node group {group['name']}: {len(members)} of its nodes in this run; "
                "NCCL across nodes needs two or more"
            )
            continue
        jobs.append(job_for_group(network, group["name"], sorted(members), options, hosts, dra))
    return {"jobs": jobs, "skipped": skipped}


def secret(job: Mapping[str, Any], private_key: str, public_key: str) -> Dict[str, Any]:
    """The Secret with this run's SSH key pair (and the GID-index script, when the Job needs it),
    mounted read-only in the Job's Pods."""

    def b64(text: str) -> str:
        return base64.b64encode(text.encode("utf-8")).decode("ascii")

    data = {"id_ed25519": b64(private_key), "authorized_keys": b64(public_key)}
    if job.get("gid_script"):
        data[GID_SCRIPT_KEY] = b64(job["gid_script"])
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": job["secret"], "namespace": job["namespace"], "labels": dict(LABELS)},
        "type": "Opaque",
        "data": data,
    }


def owned_by(obj: Mapping[str, Any], job: Mapping[str, Any], check_mode: bool = False) -> Dict[str, Any]:
    """``obj`` (the Job's Secret, Service or claim template) with an ownerReference to ``job``, the Job as the API
    server returned it (it carries the UID). ``blockOwnerDeletion`` is left unset: setting it needs
    update on ``jobs/finalizers``, and nothing waits on the dependents. In check mode a Job that was
    only dry-run applied may have no UID; the object is then returned without the reference."""
    meta = dict(obj.get("metadata") or {})
    job_meta = (job or {}).get("metadata") or {}
    uid = job_meta.get("uid")
    if job_meta.get("name") is None or job_meta.get("namespace") != meta.get("namespace"):
        raise JobPlanError(
            f"{obj.get('kind')} {meta.get('namespace')}/{meta.get('name')}: its owner must be a Job of the same"
            f" namespace, got {job_meta.get('namespace')}/{job_meta.get('name')}"
        )
    out = dict(obj)
    if not uid:
        if check_mode:
            return out
        raise JobPlanError(f"Job {job_meta.get('namespace')}/{job_meta['name']}: the API server returned no uid")
    meta["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": job_meta["name"], "uid": uid, "controller": True}
    ]
    out["metadata"] = meta
    return out


def resume(job: Mapping[str, Any]) -> Dict[str, Any]:
    """The merge patch that lets a suspended Job start."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job["name"], "namespace": job["namespace"]},
        "spec": {"suspend": False},
    }


def lab_environment(job: Mapping[str, Any]) -> Dict[str, str]:
    """What mpirun gives each rank of the Job (Open MPI's variables), for the lab's all_reduce_perf
    simulator run on one node with the Job's arguments."""
    return {
        "OMPI_COMM_WORLD_SIZE": str(len(job["nodes"]) * int(job["gpus"])),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(job["gpus"]),
    }
