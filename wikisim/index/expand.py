"""The default retriever's second stage: page scores, then the pages the best pages point to.

A multi-hop question names its first entity; the next one is named on the first one's
page ("the performer of Hello Love": the Hello Love passage names Hank Snow). A fused
passage ranking finds the first hop; this stage, over it:

1. page-level aggregation: a page scores its best passage's score;
2. expansion, one step of personalised PageRank from the first hop: each of the
   `expand_top` best pages hands `mention_weight` times its score, split evenly, to the
   pages its best passage points to: the page's links whose anchor that passage
   contains, and the pages it names (a title, a redirect, or a title less its
   qualifier, from a capitalised word on, looked up in the page store's indexes, so no
   title is held in memory whatever the corpus's size);
3. query titles: a page whose title the question itself names gains
   `query_title_weight` times the best page's score.

Every passage of a page gains its page's bonus, so the order within a page is kept; a
page the fused list missed enters with its lead passage ("<page_id>#0"). With no page
store (no titles, no links) the ranking is returned as it came. The weights and depth
were tuned on the TRAIN halves only (bench/recall.py --tune).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from wikisim.index.bm25s_import import STOPWORDS_EN
from wikisim.index.ranked import Ranked, top_k

if TYPE_CHECKING:
    from wikisim.corpus import PageStore
    from wikisim.index.passages import PassageStore

_WORD = re.compile(r"\w+")
_GENERIC = frozenset(STOPWORDS_EN)
MAX_TITLE_WORDS = 8  # longer titles are only found through links


def name_spans(text: str) -> list[tuple[int, list[str]]]:
    """For each word that starts with a capital or a digit (where names start), the spans of
    1 to MAX_TITLE_WORDS words from it, lower-cased as the page store keeps titles.

    A span of stop words and numbers only ("The", "1930") names nothing in particular.
    """
    found = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    plain = [
        all(w in _GENERIC or w.isdigit() for w in _WORD.findall(word.lower()))
        for _, _, word in found
    ]
    out = []
    for i, (start, _, word) in enumerate(found):
        if not (word[0].isupper() or word[0].isdigit()):
            continue
        spans = []
        generic = True  # so far, every word of the span is plain
        for j, (_, end, _) in enumerate(found[i : i + MAX_TITLE_WORDS], start=i):
            generic = generic and plain[j]
            spans.append("" if generic else " ".join(text[start:end].lower().split()))
        out.append((i, spans))
    return out


def mentioned(store: PageStore, text: str) -> set[int]:
    """Pages a text names by title, redirect, or title less its qualifier, leftmost-longest:
    "Hello Love" is not also a mention of "Love"."""
    starts = name_spans(text)
    named = store.pages_named([s for _, spans in starts for s in spans if s])
    out: set[int] = set()
    after = 0  # the first word past the last mention
    for i, spans in starts:
        if i < after:
            continue
        for n in range(len(spans), 0, -1):
            ids = named.get(spans[n - 1])
            if ids:
                out.update(ids)
                after = i + n
                break
    return out


def page_of(docid: str) -> str:
    return docid.partition("#")[0]


def best_by_page(ranked: Ranked) -> dict[str, tuple[str, float]]:
    """Page -> its best passage and score, in the ranking's order."""
    best: dict[str, tuple[str, float]] = {}
    for docid, score in ranked:
        best.setdefault(page_of(docid), (docid, score))
    return best


class PageExpander:
    """Re-ranks a fused passage ranking by pages, with the pages its best pages point to."""

    def __init__(self, passages: PassageStore, store: PageStore | None) -> None:
        self.passages, self.store = passages, store
        self.points_to = lru_cache(maxsize=65536)(self._points_to)

    def _points_to(self, docid: str) -> tuple[int, ...]:
        """Other pages a passage names: its page's links whose anchor it contains, and titles."""
        passage = self.passages.get(docid)
        if self.store is None or passage is None:
            return ()
        found = mentioned(self.store, passage.text)
        text = f" {' '.join(_WORD.findall(passage.text.lower()))} "
        anchored = [
            link.target.lower()
            for link in self.store.links_from(passage.page_id)
            if (anchor := " ".join(_WORD.findall(link.anchor.lower()))) and f" {anchor} " in text
        ]
        for ids in self.store.pages_named(anchored, qualified=False).values():
            found.update(ids)
        found.discard(passage.page_id)
        return tuple(sorted(found))

    def rerank(
        self,
        query: str,
        ranked: Ranked,
        expand_top: int,
        mention_weight: float,
        query_title_weight: float,
    ) -> Ranked:
        """`ranked` (best first) re-scored by page, with the pages its best pages point to."""
        if self.store is None or not ranked:
            return ranked
        best = best_by_page(ranked)
        bonus: dict[str, float] = {}
        for docid, score in list(best.values())[:expand_top]:
            targets = self.points_to(docid)
            _add(bonus, (str(t) for t in targets), mention_weight * score / max(len(targets), 1))
        top = ranked[0][1]
        _add(
            bonus, (str(t) for t in sorted(mentioned(self.store, query))), query_title_weight * top
        )
        out = [(docid, score + bonus.get(page_of(docid), 0.0)) for docid, score in ranked]
        leads = self.passages.titles([f"{page}#0" for page in sorted(bonus) if page not in best])
        out += [(lead, bonus[page_of(lead)]) for lead in leads]  # pages with passages only
        return top_k(out, len(out))


def _add(bonus: dict[str, float], pages: Iterable[str], gain: float) -> None:
    if gain:
        for page in pages:
            bonus[page] = bonus.get(page, 0.0) + gain
