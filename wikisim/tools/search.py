"""The `search` tool: top results per query, formatted as the released Tongyi DeepResearch
search tool formats Google results (a numbered markdown list per query), so a policy trained
on the web reads the same layout here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from wikisim.backends.base import Backend
from wikisim.errors import WikisimError
from wikisim.index.base import Hit
from wikisim.tools.base import ToolOutput

#: Queries joined in one observation are separated as the released tools separate them.
QUERY_SEPARATOR = "\n=======\n"
MAX_QUERIES = 10


def query_spec(what: str) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": MAX_QUERIES,
            },
        ],
        "description": f"One {what} query, or an array of complementary queries run in one call.",
    }


def as_list(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


#: A result's title in `format_search`'s page, read back by those who copy it (agent.train.teachers).
RESULT_TITLE = re.compile(r"^\d+\. \[([^\]]+)\]\(", re.M)


def format_search(query: str, hits: Sequence[Hit]) -> str:
    if not hits:
        return f"No results found for '{query}'. Try with a more general query."
    items = [f"{i}. [{h.title}]({h.url})\n\n{h.snippet}" for i, h in enumerate(hits, 1)]
    return (
        f"A Google search for '{query}' found {len(items)} results:\n\n## Web Results\n"
        + "\n\n".join(items)
    )


class QueryTool:
    """One call runs one or more queries through the backend method named like the tool.

    Why a shared base: search and scholar validate, call their backend once for every query
    and join the per-query pages the same way; only the description and the page layout differ.
    """

    name: str

    def __init__(
        self, backend: Backend, k: int, description: str, page: Callable[[str, Sequence[Any]], str]
    ) -> None:
        self.backend = backend
        self.k = k
        self.page = page
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {"query": query_spec(self.name)},
                    "required": ["query"],
                },
            },
        }

    def __call__(self, **arguments: Any) -> ToolOutput:
        queries = [q.strip() for q in as_list(arguments["query"])]
        try:
            results = getattr(self.backend, self.name)(queries, self.k)
        except WikisimError as e:
            return ToolOutput(
                f"Error: {self.name} failed on the {self.backend.name} backend: {e}", ok=False
            )
        return ToolOutput(
            QUERY_SEPARATOR.join(
                self.page(q, hits) for q, hits in zip(queries, results, strict=True)
            )
        )


class SearchTool(QueryTool):
    name = "search"

    def __init__(self, backend: Backend, k: int = 10) -> None:
        super().__init__(
            backend,
            k,
            f"Search the web. Returns the top {k} results (title, URL, snippet) for each query; "
            "several queries may be given in one call.",
            format_search,
        )
