"""Routes that speak the retrieval contracts other training stacks already call, over the same index.

- `POST /retrieve`: Search-R1's retrieval server (also verl's search tool, SkyRL-gym, GEM,
  ASearcher): `{"queries" | "query", "topk" | "top_k" | "k", "return_scores"}` ->
  `{"result": [[doc]]}` or `[[{"document": doc, "score"}]]`; a doc is a passage,
  `{"id", "contents": "\\"Title\\"\\ntext", "title", "text", "url"}` as in wiki-18.
- `POST /access`: ASearcher's page access, `{"urls": [...]}` -> `{"result": [page or null]}`,
  a page being `{"url", "title", "contents"}` (the page as Markdown).
- `POST /serper/search`: Serper's request (`{"q", "num", "page"}`, or a list of them) and
  response (`{"searchParameters", "organic": [{"title", "link", "snippet", "position"}]}`).
  The hits are the env's `search` tool's hits, so a Serper client sees what the env shows.
- `GET /jina/<url>`: Jina Reader: `Title:`, `URL Source:`, `Markdown Content:` as text, or
  `{"code", "status", "data": {"title", "description", "url", "content"}}` with
  `Accept: application/json`; 404 for a page the corpus does not hold.

The page Markdown is `page_markdown`: the title, then every passage of the page in order as its
own paragraph, under `## Section` headings. Passages hold no blank line, so a client can split
the Markdown back into exactly the passages the env's `visit` extractor ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wikisim.errors import ConfigError
from wikisim.integrations.endpoint import (
    BadRequest,
    Endpoint,
    Reply,
    as_object,
    dump,
    integer,
    strings,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from wikisim.backends.wiki import WikiBackend
    from wikisim.corpus.page import Page
    from wikisim.index.passages import Passage
    from wikisim.integrations.server import ServerLimits

SEARCH_R1_TOPK = 3  # Search-R1's server default (--topk 3)
SERPER_NUM = 10  # Serper's default "num"


def page_markdown(page: Page, passages: Sequence[Passage]) -> str:
    """`# Title`, then each passage as a paragraph, a `## Section` heading where the section changes."""
    blocks, section = [f"# {page.title}"], ""
    for p in passages:
        if p.section != section and p.section:
            blocks.append(f"## {p.section}")
        section = p.section
        blocks.append(p.text)
    return "\n\n".join(blocks)


class CompatRoutes:
    """The compatible routes' arguments and answers over one local index (a `WikiBackend`)."""

    def __init__(self, backend: WikiBackend, limits: ServerLimits) -> None:
        if not hasattr(backend, "index") or not hasattr(backend, "retriever"):
            raise ConfigError(
                f"the compatible routes need a local index backend (WikiBackend), got {backend!r}"
            )
        self.backend, self.limits = backend, limits
        self.store, self.passages = backend.index.store, backend.index.require_passages()

    def endpoints(self) -> dict[str, Endpoint]:
        return {
            "retrieve": Endpoint("retrieve", self.retrieve_args, self.retrieve),
            "access": Endpoint("access", self.access_args, self.access),
            "serper_search": Endpoint("serper_search", self.serper_args, self.serper),
            "jina": Endpoint("jina", self.jina_args, self.jina),
        }

    # /retrieve
    def retrieve_args(self, data: Any) -> dict[str, Any]:
        data = as_object(data)
        field = "queries" if "queries" in data else "query"
        if field not in data:
            raise BadRequest(400, "'queries' (a list of strings) or 'query' (a string) is required")
        queries = strings(data[field], field, self.limits.max_queries, self.limits.max_query_chars)
        scores = data.get("return_scores", False)
        if not isinstance(scores, bool):
            raise BadRequest(400, f"'return_scores' must be true or false, got {scores!r}"[:300])
        k = integer(data, ("topk", "top_k", "k"), SEARCH_R1_TOPK, self.limits.max_k)
        return {"queries": queries, "k": k, "return_scores": scores}

    def retrieve(self, args: dict[str, Any], packed: bool) -> Reply:
        ranked = self.backend.retriever.search(args["queries"], args["k"])
        texts = self.passages.by_docids([h.docid for hits in ranked for h in hits])
        result = []
        for hits in ranked:
            docs = []
            for h in hits:
                text = texts[h.docid].text
                doc = {
                    "id": h.docid,
                    "contents": f'"{h.title}"\n{text}',
                    "title": h.title,
                    "text": text,
                    "url": h.url,
                }
                docs.append({"document": doc, "score": h.score} if args["return_scores"] else doc)
            result.append(docs)
        return dump({"result": result}, packed)

    # /access
    def access_args(self, data: Any) -> dict[str, Any]:
        data = as_object(data)
        if "urls" not in data:
            raise BadRequest(400, "'urls' (a list of page URLs) is required")
        return {
            "urls": strings(
                data["urls"], "urls", self.limits.max_queries, self.limits.max_query_chars, "url"
            )
        }

    def access(self, args: dict[str, Any], packed: bool) -> Reply:
        result = []
        for url in args["urls"]:
            page = self.store.resolve(url)
            result.append(
                None
                if page is None
                else {"url": page.url, "title": page.title, "contents": self.markdown(page)}
            )
        return dump({"result": result}, packed)

    # /serper/search
    def serper_args(self, data: Any) -> dict[str, Any]:
        batch = isinstance(data, list)
        items = data if batch else [data]
        if batch and not 1 <= len(items) <= self.limits.max_queries:
            raise BadRequest(
                400, f"a batch holds 1 to {self.limits.max_queries} searches, got {len(items)}"
            )
        searches = []
        for i, item in enumerate(items):
            where = f"search {i}" if batch else "body"
            item = as_object(item, where)
            if "q" not in item:
                raise BadRequest(400, f"{where}: 'q' (the query string) is required")
            q = item["q"]
            if not isinstance(q, str) or not q.strip() or len(q) > self.limits.max_query_chars:
                raise BadRequest(
                    400,
                    f"{where}: 'q' must be a non-empty string of at most "
                    f"{self.limits.max_query_chars} characters, got {q!r}"[:300],
                )
            num = integer(item, ("num",), SERPER_NUM, self.limits.max_k)
            page = integer(item, ("page",), 1, self.limits.max_k // num or 1)
            searches.append({"q": q, "num": num, "page": page})
        return {"searches": searches, "batch": batch}

    def serper(self, args: dict[str, Any], packed: bool) -> Reply:
        answers = []
        for s in args["searches"]:
            hits = self.backend.search([s["q"]], s["num"] * s["page"])[0][
                s["num"] * (s["page"] - 1) :
            ]
            first = s["num"] * (s["page"] - 1) + 1
            organic = [
                {"title": h.title, "link": h.url, "snippet": h.snippet, "position": first + i}
                for i, h in enumerate(hits)
            ]
            answers.append(
                {
                    "searchParameters": {
                        "q": s["q"],
                        "type": "search",
                        "num": s["num"],
                        "page": s["page"],
                        "engine": "google",
                    },
                    "organic": organic,
                    "credits": 1,
                }
            )
        return dump(answers if args["batch"] else answers[0], packed)

    # /jina/<url>
    def jina_args(self, data: Any) -> dict[str, Any]:
        """`data` is (target URL as written after /jina/, whether JSON was asked for)."""
        url, as_json = data
        if not url.strip():
            raise BadRequest(
                400, "no URL after /jina/; call GET /jina/https://en.wikipedia.org/wiki/Title"
            )
        if len(url) > self.limits.max_query_chars:
            raise BadRequest(
                400,
                f"the URL has {len(url)} characters; the limit is {self.limits.max_query_chars}",
            )
        return {"url": url, "json": as_json}

    def jina(self, args: dict[str, Any], packed: bool) -> Reply:
        url = args["url"]
        page = self.store.resolve(url)
        if page is None:
            close = "; ".join(
                self.store.closest_titles(url.rsplit("/", 1)[-1].replace("_", " "), 5)
            )
            message = f"{url} is not a page of this corpus. Closest titles: {close or 'none'}."
            return dump(
                {
                    "data": None,
                    "code": 404,
                    "name": "NotFoundError",
                    "status": 40400,
                    "message": message,
                    "readableMessage": f"NotFoundError: {message}",
                },
                packed,
                404,
            )
        content = self.markdown(page)
        if args["json"] or packed:
            data = {
                "title": page.title,
                "description": page.description,
                "url": page.url,
                "content": content,
            }
            return dump({"code": 200, "status": 20000, "data": data}, packed)
        text = f"Title: {page.title}\n\nURL Source: {page.url}\n\nMarkdown Content:\n{content}"
        return Reply(200, "text/plain; charset=utf-8", text.encode("utf-8"))

    def markdown(self, page: Page) -> str:
        return page_markdown(page, self.passages.for_page(page.id))
