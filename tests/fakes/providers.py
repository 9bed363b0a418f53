"""Loopback fakes of the web APIs wikisim talks to, speaking their real wire formats.

One threaded HTTP server on 127.0.0.1 (ephemeral port) serves five routes:

- /serper/search, /serper/scholar   Serper: POST {"q", "num"}, X-API-KEY header
- /serpapi/search.json              SerpAPI: GET engine=google|google_scholar, q, num, api_key
- /jina/<url>                       Jina Reader: GET, Bearer key, Accept: application/json
- /site/<name>                      plain HTML pages for a direct fetch
- /redirect?to=URL                  a 302 to URL

Faults are injected per route, in order (`inject("serper", "500", "429:0.05")`) or on every
call (`fail_always("serper", "500")`): "timeout" (hang, then drop the connection), "slow:S",
"429" / "429:S" (Retry-After S), "500", "503", "401", "malformed" (broken JSON), "truncated"
(Content-Length larger than the body). `inconsistent = True` makes result order change
between calls, as a real search engine's does.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEY = "test-key"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def organic(query: str, num: int, shift: int = 0) -> list[dict[str, Any]]:
    """The fake engine's results for a query: deterministic unless shifted."""
    items = [
        {
            "title": f"{query.title()} - result {i}",
            "link": f"https://example.org/{_slug(query)}/{i}",
            "snippet": f"About {query}: fact number {i}.",
            "position": i,
        }
        for i in range(1, 11)
    ]
    items = items[shift % len(items) :] + items[: shift % len(items)]
    return items[:num]


def scholar_items(query: str, num: int) -> list[dict[str, Any]]:
    return [
        {
            "title": f"A study of {query} ({i})",
            "link": f"https://doi.org/10.1234/{_slug(query)}.{i}",
            "publicationInfo": f"A Author, B Writer - Journal of {query.title()}, {2000 + i} - example.org",
            "snippet": f"We study {query}.",
            "year": 2000 + i,
            "citedBy": 10 * i,
        }
        for i in range(1, min(num, 5) + 1)
    ]


PAGE_MD = """# {title}

{title} is a fictional topic used to test visits. It has a long history.

## History

The history of {title} began in 1901 when explorers found it near the river.

## Geography

{title} lies between two mountains; its climate is cold and dry.
"""

PAGE_HTML = """<html><head><title>{title}</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | Subscribe to our newsletter</nav>
<article><h1>{title}</h1>
<p>{title} is a fictional topic used to test visits. It has a long and well documented history.</p>
<h2>History</h2>
<p>The history of {title} began in 1901 when explorers found it near the river delta in spring.</p>
<h2>Geography</h2>
<p>{title} lies between two mountains; its climate is cold and dry for most of the year.</p>
</article><footer>Copyright notice and cookie banner text</footer></body></html>"""


class FakeProviders:
    """Start with `with FakeProviders() as fake:`; `fake.url` is the base URL."""

    def __init__(self, hang_s: float = 2.0):
        self.hang_s = hang_s
        self.inconsistent = False
        self.faults: dict[str, deque[str]] = defaultdict(deque)
        self.always: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakeProviders:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def env(self) -> dict[str, str]:
        """Environment variables that point WebBackend at this fake."""
        return {
            "SERPER_API_KEY": KEY,
            "SERPAPI_API_KEY": KEY,
            "JINA_API_KEY": KEY,
            "SERPER_BASE_URL": f"{self.url}/serper",
            "SERPAPI_BASE_URL": f"{self.url}/serpapi",
            "JINA_BASE_URL": f"{self.url}/jina",
        }

    def inject(self, route: str, *faults: str) -> None:
        with self._lock:
            self.faults[route].extend(faults)

    def fail_always(self, route: str, fault: str | None) -> None:
        with self._lock:
            if fault is None:
                self.always.pop(route, None)
            else:
                self.always[route] = fault

    def _next_fault(self, route: str) -> tuple[str | None, int]:
        with self._lock:
            self.calls[route] += 1
            queued = self.faults[route].popleft() if self.faults[route] else None
            return queued or self.always.get(route), self.calls[route]

    def wait(self, seconds: float) -> None:
        self._stop.wait(seconds)


def _handler(fake: FakeProviders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._dispatch(None)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            self._dispatch(self.rfile.read(length))

        def _dispatch(self, body: bytes | None) -> None:
            parts = urlsplit(self.path)
            route = parts.path.split("/")[1]
            with fake._lock:
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                fault, n = fake._next_fault(route)
                fake.requests[route].append(
                    {
                        "path": parts.path,
                        "query": parse_qs(parts.query),
                        "body": json.loads(body) if body else None,
                        "headers": dict(self.headers),
                    }
                )
                if fault and self._fault(fault):
                    return
                if (
                    route == "redirect"
                ):  # /redirect?to=URL: a 302 there (the direct fetch's address checks)
                    self._send(302, b"", "text/html", {"Location": parse_qs(parts.query)["to"][0]})
                    return
                status, payload, kind = self._answer(route, parts, body, n)
                self._send(status, payload, kind)
            finally:
                with fake._lock:
                    fake.in_flight -= 1

        def _fault(self, fault: str) -> bool:
            """Act out a fault; True when it replaced the answer."""
            name, _, arg = fault.partition(":")
            if name == "timeout":
                fake.wait(fake.hang_s)
                self.close_connection = True
                return True
            if name == "slow":
                fake.wait(float(arg))
                return False
            if name == "429":
                self._send(
                    429,
                    json.dumps({"message": "Too many requests"}).encode(),
                    "application/json",
                    {"Retry-After": arg or "0"},
                )
            elif name in ("500", "503", "401"):
                self._send(
                    int(name), json.dumps({"message": f"fault {name}"}).encode(), "application/json"
                )
            elif name == "malformed":
                self._send(200, b'{"organic": [{"title": "cut', "application/json")
            elif name == "truncated":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b'{"organic": [')
                self.close_connection = True
            else:
                raise ValueError(f"unknown fault {fault!r}")
            return True

        def _answer(
            self, route: str, parts: Any, body: bytes | None, n: int
        ) -> tuple[int, bytes, str]:
            shift = n if fake.inconsistent else 0
            if route == "serper":
                if self.headers.get("X-API-KEY") != KEY:
                    return (
                        403,
                        json.dumps({"message": "Unauthorized.", "statusCode": 403}).encode(),
                        "application/json",
                    )
                req = json.loads(body or b"{}")
                items = (
                    organic(req["q"], int(req.get("num", 10)), shift)
                    if parts.path.endswith("/search")
                    else scholar_items(req["q"], int(req.get("num", 10)))
                )
                return (
                    200,
                    json.dumps({"searchParameters": req, "organic": items}).encode(),
                    "application/json",
                )
            if route == "serpapi":
                q = parse_qs(parts.query)
                if q.get("api_key") != [KEY]:
                    return (
                        401,
                        json.dumps({"error": "Invalid API key."}).encode(),
                        "application/json",
                    )
                query, num = q["q"][0], int(q.get("num", ["10"])[0])
                if q["engine"] == ["google_scholar"]:
                    items = [
                        {
                            "position": i,
                            "title": s["title"],
                            "link": s["link"],
                            "publication_info": {
                                "summary": s["publicationInfo"],
                                "authors": [{"name": "A Author"}, {"name": "B Writer"}],
                            },
                            "inline_links": {"cited_by": {"total": s["citedBy"]}},
                        }
                        for i, s in enumerate(scholar_items(query, num), 1)
                    ]
                else:
                    items = organic(query, num, shift)
                payload = {"search_metadata": {"status": "Success"}, "organic_results": items}
                return 200, json.dumps(payload).encode(), "application/json"
            if route == "jina":
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return (
                        401,
                        json.dumps({"code": 401, "message": "Invalid API key"}).encode(),
                        "application/json",
                    )
                target = parts.path[len("/jina/") :]
                if "missing" in target:
                    msg = {
                        "code": 422,
                        "name": "AssertionFailureError",
                        "message": f"Failed to goto {target}",
                    }
                    return 422, json.dumps(msg).encode(), "application/json"
                title = target.rstrip("/").rsplit("/", 1)[-1].replace("_", " ")
                data = {"title": title, "url": target, "content": PAGE_MD.format(title=title)}
                return (
                    200,
                    json.dumps({"code": 200, "status": 20000, "data": data}).encode(),
                    "application/json",
                )
            if route == "site":
                name = parts.path[len("/site/") :]
                if name == "missing":
                    return 404, b"<html><body>Not found</body></html>", "text/html"
                return (
                    200,
                    PAGE_HTML.format(title=name.replace("_", " ")).encode(),
                    "text/html; charset=utf-8",
                )
            return (
                404,
                json.dumps({"message": f"no route {parts.path}"}).encode(),
                "application/json",
            )

        def _send(
            self, status: int, payload: bytes, kind: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

    return Handler
