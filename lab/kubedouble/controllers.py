"""Readiness "controllers": play the part of kube-controller-manager and the kubelet for the
status of Deployments, StatefulSets, ReplicaSets, DaemonSets, Jobs and Pods, and keep
PodDisruptionBudget status current.

A switch decides whether workloads become ready (default) or stay unready. A workload is
reconciled a moment after its spec changes (generation != status.observedGeneration) and when
the switch flips; a status written by a test through /status stays until then.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from typing import Any, Dict, List, Optional, Set, Tuple

from .api import Api, Request, _comparable, _pod_ready, now
from .errors import ApiError
from .resources import ResourceType
from .selectors import selector_matches

MANAGER = "kube-double-controller"
WORKLOADS = {
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("", "pods"),
    ("", "persistentvolumeclaims"),
}
DELAY = 0.15
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of pod-template-hash values


class Controllers:
    def __init__(self, api: Api, ready: bool = True) -> None:
        self.api = api
        self.ready = ready
        self._pending: Set[Tuple[str, str, str, str]] = set()
        self._handle: Optional[asyncio.TimerHandle] = None
        api.on_write.append(self._on_write)

    def _on_write(self, rt: ResourceType, obj: Dict[str, Any]) -> None:
        key = (rt.group, rt.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if (rt.group, rt.plural) in WORKLOADS or (rt.group, rt.plural) == ("", "nodes"):
            self._pending.add(key)
            self._schedule()
        if (rt.group, rt.plural) in (("", "pods"), ("policy", "poddisruptionbudgets")):
            self._pending.add(("policy", "poddisruptionbudgets", obj["metadata"].get("namespace", ""), "*"))
            self._schedule()

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._handle is None:
            self._handle = loop.call_later(DELAY, self._run)

    def set_ready(self, ready: bool) -> None:
        self.ready = ready
        for group, plural in WORKLOADS:
            for obj in self.api.store.items((group, plural)):
                self._pending.add((group, plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
        self._force = True
        self._schedule()

    def _run(self) -> None:
        self._handle = None
        pending, self._pending = self._pending, set()
        force = getattr(self, "_force", False)
        self._force = False
        for group, plural, ns, name in sorted(pending):
            try:
                if plural == "poddisruptionbudgets":
                    self._pdbs(ns)
                elif plural == "nodes":
                    self._daemonsets()
                else:
                    self._reconcile(group, plural, ns, name, force)
            except ApiError:
                continue

    # ------------------------------------------------------------------
    def _rt(self, group: str, plural: str) -> Optional[ResourceType]:
        types = self.api.registry.storage_types(group, plural)
        return types[0] if types else None

    def _reconcile(self, group: str, plural: str, ns: str, name: str, force: bool) -> None:
        rt = self._rt(group, plural)
        obj = self.api.store.get((group, plural), ns, name)
        if rt is None or obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        status = obj.get("status") or {}
        if plural in ("pods", "persistentvolumeclaims"):
            # An object whose status someone else wrote (a seed, a test) keeps it.
            if not self._owns_status(obj) or (status.get("phase") and not force):
                return
        elif not force and status.get("observedGeneration") == obj["metadata"].get("generation"):
            return
        if plural == "deployments":
            self._replicasets_of(obj)
        desired = getattr(self, "_status_" + plural)(obj)
        self._write_status(rt, obj, desired)

    @staticmethod
    def _owns_status(obj: Dict[str, Any]) -> bool:
        for entry in obj["metadata"].get("managedFields") or []:
            if entry.get("subresource") == "status" and entry.get("manager") != MANAGER:
                return False
        return True

    def _write_status(self, rt: ResourceType, obj: Dict[str, Any], desired: Dict[str, Any]) -> None:
        current = obj.get("status") or {}
        desired = _keep_transition_times(current, desired)
        if _comparable({"s": current}) == _comparable({"s": desired}):
            return
        new = copy.deepcopy(obj)
        new["status"] = desired
        self.api.update(
            rt,
            obj["metadata"].get("namespace", ""),
            obj["metadata"]["name"],
            new,
            Request(MANAGER),
            subresource="status",
        )

    def _conditions(self, pairs: List[Tuple[str, bool, str]]) -> List[Dict[str, Any]]:
        stamp = now()
        return [
            {
                "type": t,
                "status": "True" if ok else "False",
                "reason": reason,
                "lastTransitionTime": stamp,
                "lastUpdateTime": stamp,
                "message": "{} (kube-double readiness switch {})".format(reason, "on" if self.ready else "off"),
            }
            for t, ok, reason in pairs
        ]

    def _status_deployments(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        replicas = _replicas(obj)
        ready = replicas if self.ready else 0
        status = {
            "observedGeneration": obj["metadata"].get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": self._conditions(
                [
                    (
                        "Available",
                        self.ready,
                        "MinimumReplicasAvailable" if self.ready else "MinimumReplicasUnavailable",
                    ),
                    ("Progressing", True, "NewReplicaSetAvailable" if self.ready else "ReplicaSetUpdated"),
                ]
            ),
        }
        if not self.ready:
            status["unavailableReplicas"] = replicas
        return _drop_zero(status, ("readyReplicas", "availableReplicas"))

    def _replicasets_of(self, dep: Dict[str, Any]) -> None:
        """Keep one ReplicaSet per pod template, as the deployment controller does (Helm's --wait
        looks for the new ReplicaSet, matched by template and controller owner reference)."""
        rs_rt = self._rt("apps", "replicasets")
        if rs_rt is None:
            return
        meta = dep["metadata"]
        spec = dep.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        pth = "".join(_SAFE[int(digest[i : i + 2], 16) % len(_SAFE)] for i in range(0, 20, 2))
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pth
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pth
        ns = meta.get("namespace", "")
        name = "{}-{}".format(meta["name"], pth)
        owner = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        for rs in self.api.store.items(("apps", "replicasets"), ns):
            refs = rs["metadata"].get("ownerReferences") or []
            mine = any(r.get("uid") == meta["uid"] for r in refs)
            if mine and rs["metadata"]["name"] != name and (rs.get("spec") or {}).get("replicas") != 0:
                old = copy.deepcopy(rs)
                old["spec"]["replicas"] = 0
                self.api.update(rs_rt, ns, rs["metadata"]["name"], old, Request(MANAGER))
        desired = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [owner],
            },
            "spec": {"replicas": _replicas(dep), "selector": selector, "template": template},
        }
        current = self.api.store.get(("apps", "replicasets"), ns, name)
        if current is None:
            self.api.create(rs_rt, ns, desired, Request(MANAGER))
        elif (current.get("spec") or {}).get("replicas") != _replicas(dep):
            new = copy.deepcopy(current)
            new["spec"]["replicas"] = _replicas(dep)
            self.api.update(rs_rt, ns, name, new, Request(MANAGER))

    def _status_persistentvolumeclaims(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        spec = obj.get("spec") or {}
        if not self.ready:
            return {"phase": "Pending"}
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        status: Dict[str, Any] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])}
        if storage:
            status["capacity"] = {"storage": storage}
        return status

    def _status_replicasets(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        replicas = _replicas(obj)
        ready = replicas if self.ready else 0
        return _drop_zero(
            {
                "observedGeneration": obj["metadata"].get("generation", 1),
                "replicas": replicas,
                "fullyLabeledReplicas": replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
            },
            ("readyReplicas", "availableReplicas"),
        )

    def _status_statefulsets(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        replicas = _replicas(obj)
        ready = replicas if self.ready else 0
        revision = "{}-{}".format(obj["metadata"]["name"], obj["metadata"].get("generation", 1))
        return _drop_zero(
            {
                "observedGeneration": obj["metadata"].get("generation", 1),
                "replicas": replicas,
                "currentReplicas": replicas,
                "updatedReplicas": replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "currentRevision": revision,
                "updateRevision": revision,
                "collisionCount": 0,
            },
            ("readyReplicas",),
        )

    def _status_daemonsets(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        selector = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
        nodes = [
            n
            for n in self.api.store.items(("", "nodes"))
            if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        ]
        desired = len(nodes)
        ready = desired if self.ready else 0
        status = {
            "observedGeneration": obj["metadata"].get("generation", 1),
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": desired,
            "updatedNumberScheduled": desired,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
        }
        if desired - ready:
            status["numberUnavailable"] = desired - ready
        return _drop_zero(status, ("numberAvailable",))

    def _daemonsets(self) -> None:
        rt = self._rt("apps", "daemonsets")
        for obj in self.api.store.items(("apps", "daemonsets")):
            if rt is not None and self._owns_status(obj):
                self._write_status(rt, obj, self._status_daemonsets(obj))

    def _status_jobs(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        spec = obj.get("spec") or {}
        completions = spec.get("completions", 1)
        start = (obj.get("status") or {}).get("startTime") or now()
        if self.ready:
            return {
                "startTime": start,
                "completionTime": now(),
                "succeeded": completions,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
                "conditions": self._conditions(
                    [("SuccessCriteriaMet", True, "CompletionsReached"), ("Complete", True, "CompletionsReached")]
                ),
            }
        return {
            "startTime": start,
            "active": spec.get("parallelism", 1),
            "ready": 0,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        }

    def _status_pods(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        containers = (obj.get("spec") or {}).get("containers") or []
        ok = self.ready
        stamp = (obj.get("status") or {}).get("startTime") or now()
        return {
            "phase": "Running" if ok else "Pending",
            "startTime": stamp,
            "hostIP": "10.88.0.1",
            "podIP": f"10.244.0.{abs(hash(obj['metadata']['uid'])) % 250 + 2}",
            "conditions": self._conditions(
                [
                    ("PodScheduled", True, "Scheduled"),
                    ("Initialized", True, "Init"),
                    ("ContainersReady", ok, "ContainersReady"),
                    ("Ready", ok, "Ready"),
                ]
            ),
            "containerStatuses": [
                {
                    "name": c.get("name"),
                    "image": c.get("image", ""),
                    "imageID": "" if not ok else "docker.io/library/{}@sha256:{}".format(c.get("image", ""), "0" * 64),
                    "containerID": "" if not ok else "containerd://{}".format(obj["metadata"]["uid"].replace("-", "")),
                    "ready": ok,
                    "restartCount": 0,
                    "started": ok,
                    "state": {"running": {"startedAt": stamp}} if ok else {"waiting": {"reason": "ContainerCreating"}},
                }
                for c in containers
            ],
        }

    def _pdbs(self, ns: str) -> None:
        rt = self._rt("policy", "poddisruptionbudgets")
        if rt is None:
            return
        for budget in self.api.store.items(("policy", "poddisruptionbudgets"), ns):
            allowed, healthy, desired, expected = self.api.pdb_state(budget)
            status = {
                "observedGeneration": budget["metadata"].get("generation", 1),
                "disruptionsAllowed": allowed,
                "currentHealthy": healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
                "conditions": self._conditions(
                    [("DisruptionAllowed", allowed > 0, "SufficientPods" if allowed > 0 else "InsufficientPods")]
                ),
            }
            self._write_status(rt, budget, status)


def _replicas(obj: Dict[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _drop_zero(status: Dict[str, Any], keys: Tuple[str, ...]) -> Dict[str, Any]:
    """The real controllers omit zero counters (omitempty)."""
    return {k: v for k, v in status.items() if not (k in keys and v == 0)}


def _keep_transition_times(current: Dict[str, Any], desired: Dict[str, Any]) -> Dict[str, Any]:
    """Keep timestamps of conditions whose status did not change, so a no-op stays a no-op."""
    old = {c.get("type"): c for c in current.get("conditions") or []}
    for cond in desired.get("conditions") or []:
        prev = old.get(cond["type"])
        if prev and prev.get("status") == cond["status"]:
            for key in ("lastTransitionTime", "lastUpdateTime", "message", "reason"):
                if key in prev:
                    cond[key] = prev[key]
    if current.get("completionTime") and desired.get("completionTime"):
        desired["completionTime"] = current["completionTime"]
    return desired


def pod_ready(pod: Dict[str, Any]) -> bool:
    return _pod_ready(pod)


__all__ = ["Controllers", "pod_ready", "selector_matches"]
