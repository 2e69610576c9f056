"""The HTTP layer: routing of Kubernetes REST paths onto Api, discovery, watch, admin switch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any, Dict, List, Optional, Tuple

import yaml
from aiohttp import web

from . import __version__
from .api import Api, Request
from .controllers import Controllers
from .errors import ApiError
from .resources import ResourceType
from .store import Watcher

LOG = logging.getLogger("kubedouble")
SERVER_VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0-kubedouble",
    "gitCommit": "kubedouble",
    "gitTreeState": "clean",
    "buildDate": "2026-11-30T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body, separators=(",", ":")), status=status, content_type="application/json")


class Server:
    def __init__(self, ready: bool = True) -> None:
        self.api = Api()
        self.controllers = Controllers(self.api, ready)
        self.app = web.Application(middlewares=[self._errors], client_max_size=64 * 1024 * 1024)
        r = self.app.router
        r.add_get("/version", lambda _r: _json(SERVER_VERSION))
        for probe in ("/healthz", "/readyz", "/livez"):
            r.add_get(probe, lambda _r: web.Response(text="ok"))
        r.add_get("/api", self.core_versions)
        r.add_get("/apis", self.groups)
        r.add_get("/openapi/v2", self.openapi_v2)
        r.add_route("*", "/_double/ready", self.admin_ready)
        r.add_get("/_double/info", self.admin_info)
        r.add_post("/_double/compact", self.admin_compact)
        r.add_route("*", "/api/{rest:.*}", self.resource)
        r.add_route("*", "/apis/{rest:.*}", self.resource)

    @web.middleware
    async def _errors(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as err:
            return _json(err.status(), err.code)
        except web.HTTPException:
            raise
        except Exception as exc:
            LOG.exception("internal error on %s %s", request.method, request.path)
            return _json(ApiError(500, f"kube-double internal error: {exc}").status(), 500)

    # ------------------------------------------------------------------ discovery
    async def core_versions(self, _request: web.Request) -> web.Response:
        return _json(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
            }
        )

    def _group(self, group: str, versions: List[str]) -> Dict[str, Any]:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    async def groups(self, _request: web.Request) -> web.Response:
        groups = [self._group(g, vs) for g, vs in sorted(self.api.registry.group_versions().items()) if g]
        return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def _resource_list(self, group: str, version: str) -> Dict[str, Any]:
        types = self.api.registry.in_group_version(group, version)
        if not types:
            raise ApiError(404, "the server could not find the requested resource")
        resources: List[Dict[str, Any]] = []
        for rt in sorted(types, key=lambda t: t.plural):
            resources += rt.discovery()
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    async def openapi_v2(self, request: web.Request) -> web.Response:
        if "protobuf" in request.headers.get("Accept", ""):
            # An empty gnostic OpenAPIv2 Document: clients then skip client-side schema checks.
            return web.Response(body=b"", content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        return _json(
            {
                "swagger": "2.0",
                "info": {"title": "Kubernetes (kube-double)", "version": "v1.36.0"},
                "paths": {},
                "definitions": {},
            }
        )

    # ------------------------------------------------------------------ admin
    async def admin_ready(self, request: web.Request) -> web.Response:
        if request.method in ("PUT", "POST"):
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("ready"), bool):
                raise ApiError(400, 'body must be {"ready": true|false}')
            self.controllers.set_ready(body["ready"])
        return _json({"ready": self.controllers.ready})

    async def admin_compact(self, _request: web.Request) -> web.Response:
        return _json({"compactedResourceVersion": self.api.store.compact()})

    async def admin_info(self, _request: web.Request) -> web.Response:
        return _json(
            {
                "version": __version__,
                "ready": self.controllers.ready,
                "resourceVersion": self.api.store.rv,
                "kinds": sorted(f"{t.api_version}/{t.kind}" for t in self.api.registry.types.values()),
            }
        )

    # ------------------------------------------------------------------ resources
    def _route(self, path: str) -> Tuple[str, str, List[str]]:
        parts = [p for p in path.split("/") if p]
        if parts[0] == "api":
            if len(parts) < 2:
                raise ApiError(404, "the server could not find the requested resource")
            return "", parts[1], parts[2:]
        if len(parts) < 3:
            return parts[1] if len(parts) > 1 else "", "", []
        return parts[1], parts[2], parts[3:]

    async def resource(self, request: web.Request) -> web.StreamResponse:
        group, version, rest = self._route(request.path)
        if not version:
            versions = self.api.registry.group_versions().get(group)
            if not versions or request.method != "GET":
                raise ApiError(404, "the server could not find the requested resource")
            body = self._group(group, versions)
            body.update({"kind": "APIGroup", "apiVersion": "v1"})
            return _json(body)
        watch_prefix = False
        if rest and rest[0] == "watch":
            watch_prefix, rest = True, rest[1:]
        if not rest:
            if request.method != "GET":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            return _json(self._resource_list(group, version))
        ns: Optional[str] = None
        if rest[0] == "namespaces" and len(rest) >= 3 and self.api.registry.get(group, version, rest[2]):
            ns, rest = rest[1], rest[2:]
        rt = self.api.type(group, version, rest[0])
        if ns is not None and not rt.namespaced:
            raise ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or (sub and sub not in rt.subresources):
            raise ApiError(404, "the server could not find the requested resource")
        q = request.query
        manager = q.get("fieldManager") or _manager_from_agent(request.headers.get("User-Agent", ""))
        req = Request(
            manager=manager,
            dry_run=q.get("dryRun") == "All",
            strict=q.get("fieldValidation") == "Strict",
            force=q.get("force") in ("true", "1"),
            explicit=bool(q.get("fieldManager")),
        )
        ns_scope = (ns or "") if rt.namespaced else ""
        method = request.method
        if name is None:
            if method == "GET":
                if watch_prefix or q.get("watch") in ("true", "1"):
                    return await self._watch(request, rt, ns if rt.namespaced else None)
                limit = int(q.get("limit", "0") or 0)
                return _json(
                    self.api.list(
                        rt,
                        ns if rt.namespaced else None,
                        q.get("labelSelector", ""),
                        q.get("fieldSelector", ""),
                        limit,
                        q.get("continue", ""),
                    )
                )
            if method == "POST":
                body = await self._body(request, rt)
                return _json(self.api.create(rt, ns_scope, body, req), 201)
            if method == "DELETE":
                return _json(
                    self.api.delete_collection(
                        rt, ns if rt.namespaced else None, q.get("labelSelector", ""), q.get("fieldSelector", ""), req
                    )
                )
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if sub == "eviction":
            if method != "POST":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            body = await self._body(request, rt)
            return _json(self.api.evict(ns_scope, name, body, req), 201)
        if sub == "scale":
            if method == "GET":
                return _json(self.api.get_scale(rt, ns_scope, name))
            if method in ("PUT", "PATCH"):
                body = await self._body(request, rt)
                ctype = "" if method == "PUT" else request.content_type
                return _json(self.api.set_scale(rt, ns_scope, name, body, ctype, req))
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if method == "GET":
            if watch_prefix:
                return await self._watch(request, rt, ns if rt.namespaced else None, name)
            return _json(self.api.get(rt, ns_scope, name))
        if method == "PUT":
            body = await self._body(request, rt)
            return _json(self.api.update(rt, ns_scope, name, body, req, sub))
        if method == "PATCH":
            body = await self._body(request, rt)
            existed = self.api.store.get(self.api.res(rt), ns_scope, name) is not None
            out = self.api.patch(rt, ns_scope, name, body, request.content_type, req, sub)
            return _json(out, 200 if existed else 201)
        if method == "DELETE":
            body = await self._body(request, rt, optional=True) or {}
            if q.get("propagationPolicy"):
                body["propagationPolicy"] = q["propagationPolicy"]
            out = self.api.delete(rt, ns_scope, name, body, req)
            return _json(out, 200)
        raise ApiError(405, "the server does not allow this method on the requested resource")

    async def _body(self, request: web.Request, rt: ResourceType, optional: bool = False) -> Any:
        raw = await request.read()
        if not raw:
            if optional:
                return None
            raise ApiError(400, "the body of the request was empty")
        ctype = request.content_type
        if ctype.startswith(PROTOBUF):
            from .protobuf import decode_object

            return decode_object(raw)
        try:
            if "yaml" in ctype:
                return yaml.safe_load(raw.decode("utf-8"))
            return json.loads(raw.decode("utf-8"))
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, f"the body of the request could not be decoded: {exc}") from None

    # ------------------------------------------------------------------ watch
    async def _watch(
        self, request: web.Request, rt: ResourceType, ns: Optional[str], name: Optional[str] = None
    ) -> web.StreamResponse:
        q = request.query
        field_selector = q.get("fieldSelector", "")
        if name:
            field_selector = ",".join(f for f in (field_selector, f"metadata.name={name}") if f)
        match = self.api.matcher(q.get("labelSelector", ""), field_selector)

        def accept(obj: Dict[str, Any]) -> bool:
            return (ns is None or obj["metadata"].get("namespace") == ns) and match(obj)

        res = self.api.res(rt)
        watcher = Watcher(res, accept)
        rv = q.get("resourceVersion", "")
        if rv in ("", "0"):
            initial = [("ADDED", o) for o in self.api.store.items(res, ns) if accept(o)]
        else:
            events = self.api.store.since(res, int(rv)) if rv.isdigit() else None
            if events is None:
                initial = [
                    (
                        "ERROR",
                        ApiError(
                            410, f"too old resource version: {rv} ({self.api.store.rv})", reason="Expired"
                        ).status(),
                    )
                ]
            else:
                initial = [(e.type, e.obj) for e in events if accept(e.obj)]
        self.api.store.watchers.append(watcher)
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        timeout = float(q.get("timeoutSeconds") or 1800)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            for etype, obj in initial:
                await self._send(resp, rt, etype, obj)
                if etype == "ERROR":
                    return resp
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    event = await asyncio.wait_for(watcher.queue.get(), remaining)
                except asyncio.TimeoutError:
                    break
                if event is None:
                    break
                await self._send(resp, rt, event.type, event.obj)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if watcher in self.api.store.watchers:
                self.api.store.watchers.remove(watcher)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await resp.write_eof()
        return resp

    async def _send(self, resp: web.StreamResponse, rt: ResourceType, etype: str, obj: Dict[str, Any]) -> None:
        if etype != "ERROR":
            obj = dict(obj, apiVersion=rt.api_version, kind=rt.kind)
        await resp.write((json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n").encode())

    async def close_watches(self, _app: web.Application) -> None:
        for watcher in list(self.api.store.watchers):
            watcher.queue.put_nowait(None)


def _manager_from_agent(agent: str) -> str:
    """The default field manager: the User-Agent up to the first '/', as the real server does."""
    return (agent.split("/", 1)[0] or "unknown")[:128]
