"""The contract between tools and the backends that answer them (wiki, remote, web).

Tools format observations; backends return structured results. Any backend can be wrapped
by the tool executor (rate limits, retries, cache, fallback) since the wrapper is itself a
`Backend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from wikisim.index.base import Hit


@dataclass(frozen=True)
class PageView:
    """What `visit` shows for one URL: a goal-directed extract, or not-found with suggestions."""

    url: str
    title: str
    found: bool
    extract: str = ""  # lead + goal-relevant passages with section headings, within the budget
    suggestions: tuple[str, ...] = ()  # closest titles when not found


@dataclass(frozen=True)
class ScholarHit:
    title: str
    authors: tuple[str, ...]
    year: int | None
    venue: str
    doi: str
    url: str
    cited_by: tuple[str, ...]  # URLs of the corpus pages that cite it
    score: float


@runtime_checkable
class Backend(Protocol):
    name: str
    manifest_hash: str

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView: ...

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]: ...
