"""Visit providers: Jina Reader (r.jina.ai) and a direct fetch with trafilatura main-text extraction.

Both turn a URL into (title, markdown-ish text) and then cut the goal-directed extract. A page
the site says is not there (404, 410; Jina's 4xx for an unreachable target) is `found=False`,
not an error; an auth failure is an error, so the chain moves on to the next provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from wikisim.backends.base import PageView
from wikisim.backends.web.extract import goal_extract
from wikisim.backends.web.guard import AddressGuard
from wikisim.backends.web.http import expect, json_body, send
from wikisim.errors import BackendError

MAX_REDIRECTS = 10


def _not_found(url: str) -> PageView:
    return PageView(url=url, title="", found=False)


@dataclass
class JinaReader:
    """GET {base}/{url} with Accept: application/json -> {"data": {"title", "url", "content"}}."""

    api_key: str
    base_url: str
    client: httpx.Client
    timeout_s: float
    name: str = "jina"
    manifest_hash: str = ""

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView:
        response = send(
            self.client,
            "GET",
            f"{self.base_url}/{url}",
            timeout_s=self.timeout_s,
            headers={
                "Authorization": f"Bearer {self.api_key}",
                "Accept": "application/json",
                "X-Return-Format": "markdown",
            },
        )
        if response.status_code in (401, 402, 403):
            json_body(response)  # raises the provider's message: a key problem, not a missing page
        if response.status_code >= 400:
            return _not_found(url)
        data = expect(json_body(response), "data", dict)
        content = data.get("content")
        if not isinstance(content, str):
            raise BackendError("Jina answer has no text content")
        title = str(data.get("title") or url)
        return PageView(
            url=url, title=title, found=True, extract=goal_extract(content, goal, max_tokens)
        )


class DirectFetch:
    """GET the page itself; HTML goes through trafilatura (main text, headings kept as markdown).

    Only public addresses are fetched (see `AddressGuard`), each redirect hop checked again; a
    refused URL is a not-found page whose text says why. `allow` names networks to reach anyway.
    """

    name = "direct"
    manifest_hash = ""

    def __init__(self, client: httpx.Client, timeout_s: float, allow: Sequence[str] = ()) -> None:
        self.client, self.timeout_s, self.guard = client, timeout_s, AddressGuard(allow)

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView:
        if not url.startswith(("http://", "https://")):
            return _not_found(url)
        target = url
        for _ in range(MAX_REDIRECTS + 1):
            refusal = self.guard.refusal(target)
            if refusal:
                return PageView(url=url, title="", found=False, extract=refusal)
            response = send(
                self.client, "GET", target, timeout_s=self.timeout_s, follow_redirects=False
            )
            if response.next_request is None:  # not a redirect
                break
            target = str(response.next_request.url)
        else:
            raise BackendError(f"more than {MAX_REDIRECTS} redirects")
        if response.status_code >= 400:
            return _not_found(url)
        kind = response.headers.get("content-type", "")
        if "html" in kind or not kind:
            import trafilatura  # imported on first use: it takes a quarter of a second

            html = response.text
            text = trafilatura.extract(
                html, output_format="markdown", include_comments=False, include_tables=True
            )
            meta = trafilatura.extract_metadata(html)
            title = (meta.title if meta and meta.title else "") or url
            if not text:
                return PageView(url=url, title=title, found=True, extract="")
        elif kind.startswith("text/"):
            text, title = response.text, url
        else:
            raise BackendError(f"cannot read a page of content type {kind.split(';')[0]!r}")
        return PageView(
            url=url, title=title, found=True, extract=goal_extract(text, goal, max_tokens)
        )
