"""The `scholar` tool: the simulated Google Scholar over the citations the corpus's pages carry,
formatted as the released Tongyi DeepResearch scholar tool formats its results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wikisim.errors import WikisimError
from wikisim.tools.action import check_arguments
from wikisim.tools.base import Backend, ScholarHit
from wikisim.tools.search import QUERY_SEPARATOR, as_list, query_spec

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
        more = f" and {len(h.cited_by) - MAX_CITED_BY} more" if len(h.cited_by) > MAX_CITED_BY else ""
        lines.append(f"citedBy: {len(h.cited_by)} page(s): {shown}{more}")
        items.append("\n".join(lines))
    return f"A Google scholar for '{query}' found {len(items)} results:\n\n## Scholar Results\n" + "\n\n".join(items)


class ScholarTool:
    name = "scholar"

    def __init__(self, backend: Backend, k: int = 10) -> None:
        self.backend = backend
        self.k = k
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": "Search academic publications (title, authors, year, venue, DOI or URL, and the "
                f"pages that cite each). Returns the top {k} per query; several queries may be given in one call.",
                "parameters": {"type": "object", "properties": {"query": query_spec("scholar")}, "required": ["query"]},
            },
        }

    def __call__(self, **arguments: Any) -> str:
        why = check_arguments(self.name, self.schema["function"]["parameters"], arguments)
        if why:
            return f"Error: {why}"
        queries = [q.strip() for q in as_list(arguments["query"])]
        try:
            results = self.backend.scholar(queries, self.k)
        except WikisimError as e:
            return f"Error: scholar failed on the {self.backend.name} backend: {e}"
        return QUERY_SEPARATOR.join(format_scholar(q, hits) for q, hits in zip(queries, results, strict=True))
