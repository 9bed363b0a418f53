"""The scholar tool: the citations pages carry, deduplicated, with the pages that cite them."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.turns import call_tool

from wikisim.backends.wiki import WikiBackend
from wikisim.index import open_index
from wikisim.tools.scholar import ScholarTool


@pytest.fixture(scope="module")
def backend(sample_index: Path) -> WikiBackend:
    return WikiBackend(sample_index)


def test_hits_come_from_the_corpus_citations(backend: WikiBackend, sample_index: Path) -> None:
    hits = backend.scholar(["Apollo lunar surface journal"], 5)[0]
    assert len(hits) == 5 and hits[0].score >= hits[-1].score
    store = open_index(sample_index).store
    for hit in hits:
        assert hit.cited_by, hit
        citing = [store.resolve(u) for u in hit.cited_by]
        assert all(p is not None and any(c.title == hit.title for c in p.citations) for p in citing)


def test_layout_matches_the_released_scholar_tool(backend: WikiBackend) -> None:
    out = call_tool(ScholarTool(backend, k=3), query=["Apollo 11", "zzqxj"])
    first, second = out.split("\n=======\n")
    assert first.startswith(
        "A Google scholar for 'Apollo 11' found 3 results:\n\n## Scholar Results\n1. ["
    )
    assert "citedBy: 1 page(s): https://en.wikipedia.org/wiki/Apollo_11" in first
    assert "Date published: " in first
    assert second == "No results found for 'zzqxj'. Try with a more general query."


def test_bad_call(backend: WikiBackend) -> None:
    assert call_tool(ScholarTool(backend), query=[]).startswith(
        'Error: scholar argument "query" is an empty array'
    )
