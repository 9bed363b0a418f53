"""Web search and scholar providers: Serper (google.serper.dev) and SerpAPI (serpapi.com).

Each speaks its API's wire format and returns the package's records: `Hit` with the page
URL as docid and 1/rank as score (so the provider's order is kept), `ScholarHit` with the
authors and venue parsed from the result's publication line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from wikisim.backends.base import ScholarHit
from wikisim.backends.web.http import expect, json_body, send
from wikisim.errors import BackendError
from wikisim.index.base import Hit

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")


@dataclass
class _Provider:
    api_key: str
    base_url: str
    client: httpx.Client
    timeout_s: float
    name: str = ""
    manifest_hash: str = ""


def _hits(results: list, k: int) -> list[Hit]:
    hits: list[Hit] = []
    for item in results:
        if isinstance(item, dict) and isinstance(item.get("link"), str) and item["link"]:
            rank = len(hits) + 1
            hits.append(
                Hit(
                    docid=item["link"],
                    title=str(item.get("title", "")),
                    url=item["link"],
                    snippet=str(item.get("snippet", "")),
                    score=1.0 / rank,
                )
            )
        if len(hits) == k:
            break
    return hits


def _publication(summary: str) -> tuple[tuple[str, ...], str, int | None]:
    """'A Vaswani, N Shazeer… - Advances in neural …, 2017 - neurips.cc' -> authors, venue, year."""
    parts = [p.strip() for p in summary.split(" - ")]
    authors = (
        tuple(a.strip(" …") for a in parts[0].split(",") if a.strip(" …"))
        if parts and parts[0]
        else ()
    )
    venue_part = parts[1] if len(parts) > 1 else ""
    year_match = _YEAR.search(venue_part) or _YEAR.search(summary)
    venue = _YEAR.sub("", venue_part).strip(" ,…")
    return authors, venue, int(year_match.group(1)) if year_match else None


def _scholar_hit(
    rank: int, title: str, link: str, summary: str, year: Any, authors: tuple[str, ...] = ()
) -> ScholarHit:
    parsed_authors, venue, parsed_year = _publication(summary)
    doi = _DOI.search(link)
    return ScholarHit(
        title=title,
        authors=authors or parsed_authors,
        year=int(year)
        if isinstance(year, int) or (isinstance(year, str) and year.isdigit())
        else parsed_year,
        venue=venue,
        doi=doi.group(1) if doi else "",
        url=link,
        cited_by=(),
        score=1.0 / rank,
    )


class SerperSearch(_Provider):
    """POST {base}/search {"q", "num"} with X-API-KEY -> {"organic": [{title, link, snippet}]}."""

    def __init__(self, **kw: Any):
        super().__init__(name="serper", **kw)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [_hits(expect(self._post("search", q, k), "organic", list), k) for q in queries]

    def _post(self, path: str, query: str, k: int) -> Any:
        response = send(
            self.client,
            "POST",
            f"{self.base_url}/{path}",
            timeout_s=self.timeout_s,
            json={"q": query, "num": k},
            headers={"X-API-KEY": self.api_key},
        )
        return json_body(response)


class SerperScholar(SerperSearch):
    """POST {base}/scholar -> {"organic": [{title, link, publicationInfo, year, citedBy}]}."""

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]:
        out = []
        for q in queries:
            items = [
                i
                for i in expect(self._post("scholar", q, k), "organic", list)
                if isinstance(i, dict)
            ]
            out.append(
                [
                    _scholar_hit(
                        rank,
                        str(i.get("title", "")),
                        str(i.get("link", "")),
                        str(i.get("publicationInfo", "")),
                        i.get("year"),
                    )
                    for rank, i in enumerate(items[:k], 1)
                ]
            )
        return out


class SerpAPISearch(_Provider):
    """GET {base}/search.json?engine=google&q&num&api_key -> {"organic_results": [...]}."""

    def __init__(self, **kw: Any):
        super().__init__(name="serpapi", **kw)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [_hits(self._get("google", q, k), k) for q in queries]

    def _get(self, engine: str, query: str, k: int) -> list:
        response = send(
            self.client,
            "GET",
            f"{self.base_url}/search.json",
            timeout_s=self.timeout_s,
            params={"engine": engine, "q": query, "num": k, "api_key": self.api_key},
        )
        data = json_body(response)
        if (
            isinstance(data, dict)
            and "organic_results" not in data
            and isinstance(data.get("error"), str)
        ):
            if "hasn't returned any results" in data["error"]:
                return []  # SerpAPI's way of saying "no results"
            raise BackendError(f"SerpAPI error: {data['error'][:200]}")
        return expect(data, "organic_results", list)


class SerpAPIScholar(SerpAPISearch):
    """engine=google_scholar: publication_info {summary, authors [{name}]}."""

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]:
        out = []
        for q in queries:
            items = [i for i in self._get("google_scholar", q, k) if isinstance(i, dict)]
            hits = []
            for rank, i in enumerate(items[:k], 1):
                info: dict[str, Any] = (
                    i["publication_info"] if isinstance(i.get("publication_info"), dict) else {}
                )
                names = tuple(
                    a["name"]
                    for a in info.get("authors", [])
                    if isinstance(a, dict) and "name" in a
                )
                hits.append(
                    _scholar_hit(
                        rank,
                        str(i.get("title", "")),
                        str(i.get("link", "")),
                        str(info.get("summary", "")),
                        None,
                        names,
                    )
                )
            out.append(hits)
        return out
