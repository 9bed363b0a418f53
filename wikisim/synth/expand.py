"""Expansion as WebSailor-V2 does it: grow the entity set from seeds with search and visit.

Why through a `Backend`: the graph should hold what an agent can reach with the env's own
tools. From each frontier entity we search its title (hits become entities found by that
query) and visit its page (titles named in the extract become entities found via that URL).
Every discovery records the query or URL that led to it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from wikisim.backends.base import Backend
from wikisim.corpus.page import normalize_title, title_to_url, url_to_title
from wikisim.errors import ConfigError
from wikisim.synth.mentions import _TOKEN


@dataclass(frozen=True)
class ExpandConfig:
    max_nodes: int = 500
    k: int = 5  # search hits kept per query
    max_tokens: int = 1200  # visit budget per page
    max_title_tokens: int = 6

    def __post_init__(self) -> None:
        if self.max_nodes < 1 or self.k < 1 or self.max_tokens < 1:
            raise ConfigError(f"ExpandConfig values must be >= 1, got {self}")


@dataclass(frozen=True)
class Discovery:
    page_id: int
    title: str
    via: str  # "seed", "search" or "visit"
    query: str = ""  # the search query that found it
    from_url: str = ""  # the page whose visit (or whose title's search) led to it

    @property
    def provenance(self) -> str:
        return {
            "seed": "seed",
            "search": f"search:{self.query}",
            "visit": f"visit:{self.from_url}",
        }[self.via]


@dataclass(frozen=True)
class Expansion:
    found: tuple[Discovery, ...]
    queries: int
    visits: int

    def include(self) -> dict[int, str]:
        return {d.page_id: d.provenance for d in self.found}


def expand(
    backend: Backend,
    titles: Iterable[tuple[int, str]],
    seeds: list[str],
    config: ExpandConfig | None = None,
) -> Expansion:
    """Breadth-first discovery from `seeds` until `config.max_nodes` pages are found."""
    config = config or ExpandConfig()
    by_title: dict[str, int] = {}
    by_tokens: dict[tuple[str, ...], tuple[int, str]] = {}
    for pid, title in titles:
        by_title[normalize_title(title)] = pid
        toks = tuple(_TOKEN.findall(title))
        if toks and len(toks) <= config.max_title_tokens and len(title) >= 4:
            by_tokens.setdefault(toks, (pid, title))
    first = {t[0] for t in by_tokens}
    found: dict[int, Discovery] = {}
    queue: deque[int] = deque()

    def add(d: Discovery) -> None:
        if d.page_id not in found and len(found) < config.max_nodes:
            found[d.page_id] = d
            queue.append(d.page_id)

    for s in seeds:
        seed_id = by_title.get(normalize_title(s))
        if seed_id is None:
            raise ConfigError(
                f"expansion seed {s!r} is not a page of this corpus; pick a title from the store"
            )
        add(Discovery(seed_id, normalize_title(s), "seed"))
    queries = visits = 0
    while queue and len(found) < config.max_nodes:
        cur = found[queue.popleft()]
        url = title_to_url(cur.title)
        queries += 1
        for hit in backend.search([cur.title], config.k)[0]:
            title = url_to_title(hit.url) or hit.title
            hit_id = by_title.get(normalize_title(title))
            if hit_id is not None:
                add(
                    Discovery(
                        hit_id, normalize_title(title), "search", query=cur.title, from_url=url
                    )
                )
        visits += 1
        view = backend.visit(url, f"entities related to {cur.title}", config.max_tokens)
        if not view.found:
            continue
        words = _TOKEN.findall(view.extract)
        for i, word in enumerate(words):
            if word not in first:
                continue
            for n in range(min(config.max_title_tokens, len(words) - i), 0, -1):
                hit_title = by_tokens.get(tuple(words[i : i + n]))
                if hit_title is not None:
                    add(Discovery(hit_title[0], hit_title[1], "visit", from_url=view.url))
                    break
    return Expansion(tuple(found.values()), queries, visits)
