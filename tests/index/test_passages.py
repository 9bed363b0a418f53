"""Passages: cut along sections and paragraphs within the word budget; the SQLite store."""

from __future__ import annotations

import pytest

from wikisim.corpus.page import Page, Section
from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index.passages import PassageStore, PassageStoreWriter, split_page
from wikisim.index.snippets import snippet


def _words(n: int, word: str) -> str:
    return " ".join([word] * n) + "."


@pytest.fixture()
def page() -> Page:
    lead = "\n".join([_words(60, "alpha"), _words(60, "beta"), _words(60, "gamma")])
    history = "\n".join([_words(30, "delta"), _words(400, "epsilon")])
    return Page(
        id=7,
        title="Test page",
        text=lead + "\n" + history,
        sections=(Section("", 0, lead), Section("History", 2, history), Section("Empty", 2, "")),
    )


def test_split_page_respects_sections_paragraphs_and_budget(page: Page) -> None:
    passages = split_page(page, words=150)
    assert [p.docid for p in passages] == [f"7#{n}" for n in range(len(passages))]
    assert all(p.title == "Test page" and p.url.endswith("/Test_page") for p in passages)
    assert all(len(p.text.split()) <= 150 for p in passages)
    # two 60-word paragraphs pack together; the third would overflow and starts a new passage
    assert passages[0].text.split("\n") == [_words(60, "alpha"), _words(60, "beta")]
    assert passages[1].section == "" and passages[1].text.startswith("gamma")
    history = [p for p in passages if p.section == "History"]
    assert history[0].text.startswith("delta") and {p.section for p in passages} == {"", "History"}
    # the 400-word paragraph is cut by words, and every word of the page is kept exactly once
    assert sum(len(p.text.split()) for p in passages) == len(page.text.split())


def test_smaller_budget_gives_more_passages(page: Page) -> None:
    assert len(split_page(page, words=50)) > len(split_page(page, words=150))
    with pytest.raises(ConfigError, match="passage_words"):
        split_page(page, words=5)


def test_page_without_sections_uses_its_text() -> None:
    passages = split_page(Page(id=3, title="Plain", text="One sentence here. And another."), 150)
    assert [(p.docid, p.section, p.text) for p in passages] == [
        ("3#0", "", "One sentence here. And another.")
    ]


def test_passage_store_roundtrip(tmp_path, page: Page) -> None:
    writer = PassageStoreWriter(tmp_path / "p.sqlite")
    writer.add(split_page(page, 150))
    other = split_page(Page(id=9, title="Other", text="Lonely text of a second page."), 150)
    writer.add(other)
    writer.close()
    store = PassageStore(tmp_path / "p.sqlite")
    assert len(store) == len(split_page(page, 150)) + 1
    assert store.get("9#0") == other[0]
    assert store.get("9#1") is None
    assert [p.docid for p in store.for_page(7)] == [f"7#{n}" for n in range(len(store) - 1)]
    last = len(store) - 1
    assert store.docids([0, last]) == {0: "7#0", last: "9#0"}
    assert store.by_rows([last]) == {last: other[0]}
    assert store.docids([last, 10_000]) == {
        last: "9#0"
    }  # served from the cache, unknown rows left out
    assert store.titles(["9#0", "7#0", "9#1", "x#0", "12#0"]) == {"9#0": "Other", "7#0": page.title}
    with pytest.raises(IndexNotBuiltError, match="no passage store"):
        PassageStore(tmp_path / "missing.sqlite")


def test_snippet_is_query_focused_capped_and_deterministic() -> None:
    text = (
        "Paris is the capital of France. The Seine flows through it. "
        "Its museums include the Louvre, the largest art museum. Bread is sold everywhere."
    )
    s = snippet(text, "which museum is the largest", max_chars=80)
    assert s == "Its museums include the Louvre, the largest art museum."
    assert snippet(text, "which museum is the largest", max_chars=80) == s
    assert snippet(text, "zzz unrelated", max_chars=40).startswith("Paris is the capital")
    long = snippet("word " * 200, "word", max_chars=50)
    assert len(long) <= 50 and long.endswith("...")
