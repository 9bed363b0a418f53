"""The retrieval server behind `wikisim serve`: search, visit and scholar over HTTP (JSON or msgpack),
and the routes other stacks call (`routes_compat`: /retrieve, /access, /serper/search, /jina/<url>).

Why: one loaded index shared by any number of env workers on any number of machines, with
the same answers as the in-process backend (the JSON form of `wikisim.backends.cache` is
lossless). Since the backend is a pure function of the call, answers are memoised (LRU).
Starlette on uvicorn; the backend runs inline on the event loop's one thread, so a backend
that is not thread-safe (SQLite handles, scorers) stays safe and answers are computed in
arrival order. Limits bound every request; a bad one gets a 4xx JSON error
`{"error": {"status", "message"}}` that names the field to change."""

from __future__ import annotations

import json
import math
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from wikisim import __version__
from wikisim.backends.base import Backend
from wikisim.backends.cache import encode
from wikisim.errors import ConfigError, ToolCallError, WikisimError
from wikisim.integrations.endpoint import (
    BadRequest,
    Endpoint,
    Reply,
    as_object,
    decode_body,
    dump,
    integer,
    strings,
    wants_msgpack,
)
from wikisim.integrations.routes_compat import CompatRoutes

if TYPE_CHECKING:
    from wikisim.backends.wiki import WikiBackend

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, math.inf)


@dataclass(frozen=True)
class ServerLimits:
    """Per-request bounds; exceeding one is a 4xx, never a slow or unbounded request."""

    max_body_bytes: int = 1 << 20
    max_queries: int = 32
    max_k: int = 100
    max_query_chars: int = 2_000
    max_tokens: int = 100_000
    memo_size: int = 4096  # answers kept (LRU); the backend is a pure function of the call

    def __post_init__(self) -> None:
        if self.memo_size < 0:
            raise ConfigError(f"ServerLimits.memo_size must be >= 0, got {self.memo_size}")
        for name in ("max_body_bytes", "max_queries", "max_k", "max_query_chars", "max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ServerLimits.{name} must be >= 1, got {getattr(self, name)}")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)


class Metrics:
    """Request counts by endpoint and status, and a latency histogram (Prometheus text format)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self.buckets: Counter[tuple[str, float]] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.count: Counter[str] = Counter()
        self.memo_hits = 0

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests[(endpoint, status)] += 1
        self.seconds[endpoint] += seconds
        self.count[endpoint] += 1
        for bound in LATENCY_BUCKETS_S:
            if seconds <= bound:
                self.buckets[(endpoint, bound)] += 1

    def render(self) -> str:
        lines = [
            "# TYPE wikisim_memo_hits_total counter",
            f"wikisim_memo_hits_total {self.memo_hits}",
            "# TYPE wikisim_requests_total counter",
        ]
        lines += [
            f'wikisim_requests_total{{endpoint="{e}",status="{s}"}} {n}'
            for (e, s), n in sorted(self.requests.items())
        ]
        lines.append("# TYPE wikisim_request_seconds histogram")
        for e in sorted(self.count):
            for bound in LATENCY_BUCKETS_S:
                le = "+Inf" if math.isinf(bound) else repr(bound)
                lines.append(
                    f'wikisim_request_seconds_bucket{{endpoint="{e}",le="{le}"}} {self.buckets[(e, bound)]}'
                )
            lines.append(f'wikisim_request_seconds_sum{{endpoint="{e}"}} {self.seconds[e]:.6f}')
            lines.append(f'wikisim_request_seconds_count{{endpoint="{e}"}} {self.count[e]}')
        return "\n".join(lines) + "\n"


class _Handlers:
    """Every route answers through `_run`: decode, validate, memo, answer, metrics."""

    def __init__(self, backend: Backend, limits: ServerLimits):
        self.backend, self.limits, self.metrics = backend, limits, Metrics()
        self.memo: OrderedDict[str, Reply] = OrderedDict()
        self.endpoints = {
            name: Endpoint(name, self._args_for(name), self._answer)
            for name in ("search", "visit", "scholar")
        }
        self.endpoints.update(
            CompatRoutes(cast("WikiBackend", backend), limits).endpoints()
        )  # serve runs the wiki backend

    async def _body(self, request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.limits.max_body_bytes:
            raise BadRequest(
                413, f"body of {declared} bytes exceeds the limit of {self.limits.max_body_bytes}"
            )
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.limits.max_body_bytes:
                raise BadRequest(
                    413, f"body exceeds the limit of {self.limits.max_body_bytes} bytes"
                )
        return decode_body(body, request.headers.get("content-type", ""))

    async def _run(self, endpoint: Endpoint, request: Request, data: Any = None) -> Response:
        """Answer `request` on `endpoint`; `data` stands in for the body (GET routes read the path)."""
        start = time.perf_counter()
        try:
            packed = wants_msgpack(request.headers)
            args = endpoint.args(await self._body(request) if data is None else data)
            key = json.dumps([endpoint.name, packed, args], ensure_ascii=False)
            reply = self.memo.get(key)
            if reply is None:
                reply = endpoint.answer(args, packed)
                if self.limits.memo_size:
                    self.memo[key] = reply
                    if len(self.memo) > self.limits.memo_size:
                        self.memo.popitem(last=False)
            else:
                self.memo.move_to_end(key)
                self.metrics.memo_hits += 1
            response = Response(reply.body, status_code=reply.status, media_type=reply.media_type)
        except BadRequest as e:
            response = _error(e.status, str(e))
        except (ConfigError, ToolCallError) as e:
            response = _error(400, str(e))
        except WikisimError as e:
            response = _error(503, f"the backend failed: {e}")
        self.metrics.observe(endpoint.name, response.status_code, time.perf_counter() - start)
        return response

    def _args_for(self, endpoint: str) -> Callable[[Any], dict[str, Any]]:
        """The validated arguments of a native call (also the memo key)."""

        def args(data: Any) -> dict[str, Any]:
            data = as_object(data)
            if endpoint == "visit":
                url, goal = data.get("url"), data.get("goal", "")
                if not isinstance(url, str) or not url.strip():
                    raise BadRequest(400, f"'url' must be a non-empty string, got {url!r}"[:300])
                if not isinstance(goal, str) or len(goal) > self.limits.max_query_chars:
                    raise BadRequest(
                        400,
                        f"'goal' must be a string of at most {self.limits.max_query_chars} characters",
                    )
                max_tokens = integer(data, ("max_tokens",), 1500, self.limits.max_tokens)
                return {"endpoint": endpoint, "url": url, "goal": goal, "max_tokens": max_tokens}
            queries = strings(
                data.get("queries"), "queries", self.limits.max_queries, self.limits.max_query_chars
            )
            return {
                "endpoint": endpoint,
                "queries": queries,
                "k": integer(data, ("k",), 10, self.limits.max_k),
            }

        return args

    def _answer(self, args: dict[str, Any], packed: bool) -> Reply:
        endpoint = args["endpoint"]
        if endpoint == "visit":
            payload: dict[str, Any] = {
                "page": encode(
                    "visit", self.backend.visit(args["url"], args["goal"], args["max_tokens"])
                )
            }
        else:
            results = getattr(self.backend, endpoint)(args["queries"], args["k"])
            payload = {"results": [encode(endpoint, hits) for hits in results]}
        return dump(payload, packed)

    def route(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        endpoint = self.endpoints[name]

        async def handle(request: Request) -> Response:
            return await self._run(endpoint, request)

        return handle

    async def jina(self, request: Request) -> Response:
        """GET /jina/<url>: the target is the rest of the path (and its query string, if any)."""
        target = request.path_params["url"] + (f"?{request.url.query}" if request.url.query else "")
        as_json = "application/json" in request.headers.get("accept", "")
        return await self._run(self.endpoints["jina"], request, (target, as_json))

    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "backend": self.backend.name,
                "manifest_hash": self.backend.manifest_hash,
                "version": __version__,
            }
        )

    async def prometheus(self, request: Request) -> Response:
        return PlainTextResponse(self.metrics.render(), media_type="text/plain; version=0.0.4")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    hint = {
        404: f"no endpoint {request.url.path}; use POST /search, /visit, /scholar, /retrieve, /access, "
        "/serper/search, GET /jina/<url>, /health or /metrics",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    return _error(exc.status_code, hint)


def create_app(backend: WikiBackend, limits: ServerLimits | None = None) -> Starlette:
    """The ASGI app serving `backend` (a local index); run it with uvicorn (see `wikisim.commands.serve`)."""
    h = _Handlers(backend, limits or ServerLimits())
    post = ("search", "visit", "scholar", "retrieve", "access")
    routes = [Route(f"/{name}", h.route(name), methods=["POST"]) for name in post]
    routes += [
        Route("/serper/search", h.route("serper_search"), methods=["POST"]),
        Route("/jina/{url:path}", h.jina, methods=["GET"]),
        Route("/health", h.health, methods=["GET"]),
        Route("/metrics", h.prometheus, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
