"""The contract between tools and the backends that answer them (wiki, remote, web).

Tools format observations; backends return structured results. Any backend can be wrapped
by the tool executor (rate limits, retries, cache, fallback) since the wrapper is itself a
`Backend`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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
    """What answers the tools: the wiki index, a `wikisim serve` instance, or the web.

    Whoever builds a backend closes it: an env closes the one it built from its config, and
    a backend passed to several envs (a vector env, the harness) is closed by whoever made it.
    """

    name: str
    manifest_hash: str

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView: ...

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]: ...

    def manifest(self) -> Mapping[str, Any]:
        """What it serves: the index manifest (content hashes, corpus date), or {} for the web."""
        ...

    def trace(self) -> Sequence[Traced]:
        """The calls this thread made since the last trace: retries, fallbacks, cache hits."""
        ...

    def close(self) -> None: ...


class Traced(Protocol):
    """One traced backend call, as the env reports it in the step info."""

    def as_dict(self) -> dict[str, Any]: ...
