"""The `scholar` tool: the simulated Google Scholar over the citations the corpus's pages carry,
formatted as the released Tongyi DeepResearch scholar tool formats its results.
"""

from __future__ import annotations

from collections.abc import Sequence

from wikisim.backends.base import Backend, ScholarHit
from wikisim.tools.search import QueryTool

MAX_CITED_BY = 5


def _link(hit: ScholarHit) -> str:
    if hit.url:
        return hit.url
    if hit.doi:
        return f"https://doi.org/{hit.doi}"
    return "no available link"


def format_scholar(query: str, hits: Sequence[ScholarHit]) -> str:
    if not hits:
        return f"No results found for '{query}'. Try with a more general query."
    items = []
    for i, h in enumerate(hits, 1):
        lines = [f"{i}. [{h.title}]({_link(h)})"]
        info = ", ".join(h.authors)
        if h.venue:
            info = f"{info} - {h.venue}" if info else h.venue
        if info:
            lines.append(f"publicationInfo: {info}")
        if h.year is not None:
            lines.append(f"Date published: {h.year}")
        if h.doi:
            lines.append(f"DOI: {h.doi}")
        shown = ", ".join(h.cited_by[:MAX_CITED_BY])
        more = (
            f" and {len(h.cited_by) - MAX_CITED_BY} more" if len(h.cited_by) > MAX_CITED_BY else ""
        )
        lines.append(f"citedBy: {len(h.cited_by)} page(s): {shown}{more}")
        items.append("\n".join(lines))
    return (
        f"A Google scholar for '{query}' found {len(items)} results:\n\n## Scholar Results\n"
        + "\n\n".join(items)
    )


class ScholarTool(QueryTool):
    name = "scholar"

    def __init__(self, backend: Backend, k: int = 10) -> None:
        super().__init__(
            backend,
            k,
            "Search academic publications (title, authors, year, venue, DOI or URL, and the "
            f"pages that cite each). Returns the top {k} per query; several queries may be given in one call.",
            format_scholar,
        )
