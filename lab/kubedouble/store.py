"""Object storage: objects by resource and name, a resourceVersion clock and watch fan-out."""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

# (group, plural) — the storage of a resource is shared by all its served versions.
ResKey = Tuple[str, str]
ObjKey = Tuple[str, str]  # (namespace or "", name)

HISTORY = 5000


class Event:
    __slots__ = ("obj", "res", "rv", "type")

    def __init__(self, rv: int, res: ResKey, type_: str, obj: Dict[str, Any]) -> None:
        self.rv = rv
        self.res = res
        self.type = type_
        self.obj = obj


class Watcher:
    def __init__(self, res: ResKey, accept: Callable[[Dict[str, Any]], bool]) -> None:
        self.res = res
        self.accept = accept
        self.queue: asyncio.Queue[Optional[Event]] = asyncio.Queue()


class Store:
    def __init__(self) -> None:
        self.data: Dict[ResKey, Dict[ObjKey, Dict[str, Any]]] = {}
        self.rv = 1
        self.history: Deque[Event] = deque(maxlen=HISTORY)
        self.watchers: List[Watcher] = []
        self.compacted = 0  # events up to this resourceVersion are gone (as after etcd compaction)

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def get(self, res: ResKey, ns: str, name: str) -> Optional[Dict[str, Any]]:
        return self.data.get(res, {}).get((ns, name))

    def items(self, res: ResKey, ns: Optional[str] = None) -> List[Dict[str, Any]]:
        objs = self.data.get(res, {})
        keys = sorted(k for k in objs if ns is None or k[0] == ns)
        return [objs[k] for k in keys]

    def namespaced_items(self, ns: str) -> List[Tuple[ResKey, Dict[str, Any]]]:
        out = []
        for res, objs in self.data.items():
            for (ons, _name), obj in sorted(objs.items()):
                if ons == ns:
                    out.append((res, obj))
        return out

    def put(self, res: ResKey, obj: Dict[str, Any], created: bool) -> Dict[str, Any]:
        meta = obj["metadata"]
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self.data.setdefault(res, {})[(meta.get("namespace", ""), meta["name"])] = obj
        self._emit(res, "ADDED" if created else "MODIFIED", obj)
        return obj

    def remove(self, res: ResKey, ns: str, name: str) -> Optional[Dict[str, Any]]:
        obj = self.data.get(res, {}).pop((ns, name), None)
        if obj is None:
            return None
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self._emit(res, "DELETED", obj)
        return obj

    def drop_resource(self, res: ResKey) -> None:
        self.data.pop(res, None)

    def _emit(self, res: ResKey, type_: str, obj: Dict[str, Any]) -> None:
        event = Event(self.rv, res, type_, obj)
        self.history.append(event)
        for w in list(self.watchers):
            if w.res == res and w.accept(obj):
                w.queue.put_nowait(event)

    def since(self, res: ResKey, rv: int) -> Optional[List[Event]]:
        """Events after rv, or None when rv is older than the kept history (410 Expired)."""
        oldest = self.history[0].rv if self.history else self.rv + 1
        if rv < self.compacted or (rv < oldest - 1 and len(self.history) == self.history.maxlen):
            return None
        return [e for e in self.history if e.res == res and e.rv > rv]

    def compact(self) -> int:
        """Forget the event history, as etcd compaction does; older watches get 410."""
        self.history.clear()
        self.compacted = self.rv
        return self.rv
