"""The visit tool: resolution (URL, title, redirect), goal-directed extracts within budget, not-found
suggestions, and the LLM extractor over a loopback chat-completions server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fakes.replies import send_json
from fakes.turns import call_tool

from wikisim.backends.extract import LLMExtractor
from wikisim.backends.llm import ChatClient, ChatConfig
from wikisim.backends.wiki import WikiBackend
from wikisim.text import count_tokens
from wikisim.tools.visit import VisitTool


@pytest.fixture(scope="module")
def backend(sample_index: Path) -> WikiBackend:
    return WikiBackend(sample_index)


def test_extract_has_lead_relevant_passages_and_headings(backend: WikiBackend) -> None:
    view = backend.visit(
        "https://en.wikipedia.org/wiki/Albert_Einstein", "Nobel Prize in Physics", 600
    )
    assert (
        view.found
        and view.title == "Albert Einstein"
        and view.url == "https://en.wikipedia.org/wiki/Albert_Einstein"
    )
    assert view.extract.startswith("Evidence in page: \n# Albert Einstein\n")
    assert "1921 Nobel Prize in Physics" in view.extract and "\n## " in view.extract
    evidence = view.extract.split("\n\nSummary: \n")[0]
    assert count_tokens(evidence) <= 600 + 10


def test_the_goal_changes_what_is_shown(backend: WikiBackend) -> None:
    a = backend.visit("Alabama", "civil rights movement Montgomery bus boycott", 400).extract
    b = backend.visit("Alabama", "climate temperature rainfall", 400).extract
    assert a != b and "boycott" in a.lower() and "rainfall" in b.lower()


def test_titles_redirects_and_urls_resolve_to_the_same_page(
    backend: WikiBackend, sample_index: Path
) -> None:
    from wikisim.index import open_index

    store = open_index(sample_index).store
    redirect = next(r for r in store.redirects() if store.resolve(r.target) is not None)
    by_redirect = backend.visit(redirect.source, "overview", 300)
    assert by_redirect.found and by_redirect.title == store.resolve(redirect.target).title
    assert backend.visit("angola", "x", 300).title == "Angola"
    assert backend.visit("https://en.wikipedia.org/wiki/Angola#Economy", "x", 300).title == "Angola"


def test_not_found_and_foreign_sites(backend: WikiBackend) -> None:
    out = call_tool(
        VisitTool(backend),
        url=["https://example.org/Aardvark", "https://en.wikipedia.org/wiki/Aardvarkk"],
        goal="diet",
    )
    first, second = out.split("\n=======\n")
    assert first.startswith(
        "The useful information in https://example.org/Aardvark for user goal diet as follows: \n\n"
    )
    assert (
        "could not be accessed. https://example.org/Aardvark is not a page of this corpus" in first
    )
    assert "Aardvark (https://en.wikipedia.org/wiki/Aardvark)" in first
    assert (
        "There is no page titled 'Aardvarkk'" in second
        and "Aardvark (https://en.wikipedia.org/wiki/Aardvark)" in second
    )


def test_bad_calls(backend: WikiBackend) -> None:
    assert 'missing the required argument "goal"' in call_tool(VisitTool(backend), url="Angola")
    assert "has 6 items; at most 5" in call_tool(VisitTool(backend), url=["Angola"] * 6, goal="g")


class _Summariser(BaseHTTPRequestHandler):
    replies: list[str] = []
    calls = 0

    def do_POST(self) -> None:  # noqa: N802
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        content = type(self).replies[min(type(self).calls, len(type(self).replies)) - 1]
        send_json(
            self, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    def log_message(self, *args) -> None:
        pass


def test_llm_extractor_is_used_cached_and_falls_back(sample_index: Path, tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Summariser)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _Summariser.replies = [
            '```json\n{"rational": "r", "evidence": "Luanda is the capital.", "summary": "Capital: Luanda."}\n```',
            "not json at all",
        ]
        client = ChatClient(
            ChatConfig(f"http://127.0.0.1:{server.server_address[1]}/v1", "m"), cache=tmp_path
        )
        backend = WikiBackend(sample_index, extractor=LLMExtractor(client))
        view = backend.visit("Angola", "capital", 500)
        assert (
            view.extract
            == "Evidence in page: \nLuanda is the capital.\n\nSummary: \nCapital: Luanda."
        )
        assert backend.visit("Angola", "capital", 500) == view and _Summariser.calls == 1  # cached
        fallback = backend.visit(
            "Alberta", "capital", 500
        )  # unparsable reply: the deterministic extract
        assert _Summariser.calls == 2 and fallback.extract.startswith(
            "Evidence in page: \n# Alberta\n"
        )
    finally:
        server.shutdown()
        server.server_close()
