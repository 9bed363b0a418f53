"""The search tool over the wiki backend: Tongyi layout, one URL per page, several queries, bad calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.turns import call_tool

from wikisim.backends.base import Backend
from wikisim.backends.factory import make_backend
from wikisim.backends.wiki import WikiBackend
from wikisim.errors import ConfigError
from wikisim.tools.search import QUERY_SEPARATOR, SearchTool


@pytest.fixture(scope="module")
def backend(sample_index: Path) -> WikiBackend:
    return WikiBackend(sample_index)


def test_layout_matches_the_released_search_tool(backend: WikiBackend) -> None:
    out = call_tool(SearchTool(backend), query="capital of Angola")
    assert out.startswith(
        "A Google search for 'capital of Angola' found 10 results:\n\n## Web Results\n1. [Angola](https://en.wikipedia.org/wiki/Angola)\n\n"
    )
    items = re.findall(
        r"^(\d+)\. \[(.*?)\]\((https://en\.wikipedia\.org/wiki/\S+)\)$", out, flags=re.M
    )
    assert [int(n) for n, _, _ in items] == list(range(1, 11))
    assert len({u for _, _, u in items}) == 10  # one result per page, as a web engine lists them
    assert "The capital and largest city of Angola is Luanda" in out  # the snippet is query-focused


def test_several_queries_in_one_call(backend: WikiBackend) -> None:
    out = call_tool(SearchTool(backend, k=3), query=["Apollo 8", "aardwolf"])
    first, second = out.split(QUERY_SEPARATOR)
    assert "for 'Apollo 8' found 3 results" in first and "[Apollo 8]" in first
    assert "for 'aardwolf' found" in second and "[Aardwolf]" in second


def test_no_results(backend: WikiBackend) -> None:
    assert (
        call_tool(SearchTool(backend), query="zzqxj")
        == "No results found for 'zzqxj'. Try with a more general query."
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, 'missing the required argument "query"'),
        ({"query": 3}, "must be string | array of strings"),
        ({"query": ["ok", ""]}, "item 1 is empty"),
        ({"query": "x", "k": 3}, "unexpected argument 'k'"),
    ],
)
def test_bad_calls_return_errors(backend: WikiBackend, arguments: dict, expected: str) -> None:
    out = call_tool(SearchTool(backend), **arguments)
    assert out.startswith("Error: search") and expected in out


def test_backend_is_a_backend_and_results_are_stable(
    backend: WikiBackend, sample_index: Path
) -> None:
    assert isinstance(backend, Backend) and backend.manifest_hash
    again = WikiBackend(sample_index)
    assert backend.search(["Huxley", "alkali metal"], 10) == again.search(
        ["Huxley", "alkali metal"], 10
    )


def test_make_backend(sample_index: Path) -> None:
    assert isinstance(
        make_backend("wiki", index=sample_index).wiki, WikiBackend
    )  # behind the executor
    with pytest.raises(ConfigError, match="unknown backend 'bing'"):
        make_backend("bing")
    with pytest.raises(ConfigError, match="unknown retriever .tfidf.; choose one of"):
        make_backend("wiki", index=sample_index, retriever="tfidf")


def test_hybrid_retriever_serves_the_same_tool(sample_index: Path) -> None:
    """Any RankedRetriever works (Lucene too; its JVM start is left to the index tests)."""
    backend = WikiBackend(sample_index, retriever="hybrid")
    out = call_tool(SearchTool(backend, k=5), query="Apollo 8 lunar orbit Frank Borman")
    assert (
        "found 5 results" in out and "1. [Apollo 8](https://en.wikipedia.org/wiki/Apollo_8)" in out
    )
