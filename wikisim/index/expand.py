"""The default retriever's second stage: page scores, then the pages the best pages point to.

A multi-hop question names its first entity; the next one is named on the first one's
page ("the performer of Hello Love": the Hello Love passage names Hank Snow). A fused
passage ranking finds the first hop; this stage, over it:

1. page-level aggregation: a page scores its best passage's score;
2. expansion, one step of personalised PageRank from the first hop: each of the
   `expand_top` best pages hands `mention_weight` times its score, split evenly, to the
   pages its best passage points to (the page's links whose anchor that passage
   contains, and the corpus titles it mentions);
3. query titles: a page whose title the question itself names gains
   `query_title_weight` times the best page's score.

Every passage of a page gains its page's bonus, so the order within a page is kept; a
page the fused list missed enters with its lead passage ("<page_id>#0"). With no page
store (no titles, no links) the ranking is returned as it came. The weights and depth
were tuned on the TRAIN halves only (bench/recall.py --tune).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from bm25s.stopwords import STOPWORDS_EN

from wikisim.index.ranked import Ranked, top_k

if TYPE_CHECKING:
    from wikisim.corpus import PageStore
    from wikisim.index.passages import PassageStore

_WORD = re.compile(r"\w+")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")  # "Hello Love (song)" -> "Hello Love"
_GENERIC = frozenset(STOPWORDS_EN)
MAX_TITLE_WORDS = 8  # longer titles are only found through links


def words(text: str) -> tuple[str, ...]:
    """Lower-cased words with accents folded: "Aschenbrödel" and "Aschenbrodel" agree."""
    folded = unicodedata.normalize("NFKD", text.lower())
    return tuple(_WORD.findall("".join(c for c in folded if not unicodedata.combining(c))))


def title_forms(title: str) -> set[tuple[str, ...]]:
    """The word sequences a text names a page by: its title, and without a "(disambiguation)".

    A form of stop words and numbers only ("The", "1930") names nothing in particular.
    """
    out = set()
    for form in (words(title), words(_DISAMBIGUATION.sub("", title))):
        if 0 < len(form) <= MAX_TITLE_WORDS and any(
            w not in _GENERIC and not w.isdigit() for w in form
        ):
            out.add(form)
    return out


class TitleIndex:
    """Which pages a text names: every page title and redirect, as word sequences."""

    def __init__(self, store: PageStore) -> None:
        #: a page's id by its title or the title of a redirect to it (what links name)
        self.by_title: dict[str, int] = dict((title, page_id) for page_id, title in store.titles())
        for redirect in store.redirects():
            if redirect.target in self.by_title and redirect.source not in self.by_title:
                self.by_title[redirect.source] = self.by_title[redirect.target]
        found: dict[tuple[str, ...], set[int]] = {}
        for name, page_id in self.by_title.items():
            for form in title_forms(name):
                found.setdefault(form, set()).add(page_id)
        self.pages = {form: tuple(sorted(ids)) for form, ids in found.items()}
        self.longest = max((len(f) for f in self.pages), default=0)

    def mentioned(self, text: str) -> set[int]:
        """Pages named in `text`, leftmost-longest: "Hello Love" is not also a mention of "Love"."""
        seq = words(text)
        out: set[int] = set()
        i = 0
        while i < len(seq):
            for n in range(min(self.longest, len(seq) - i), 0, -1):
                ids = self.pages.get(seq[i : i + n])
                if ids is not None:
                    out.update(ids)
                    i += n
                    break
            else:
                i += 1
        return out


def page_of(docid: str) -> str:
    return docid.partition("#")[0]


class PageExpander:
    """Re-ranks a fused passage ranking by pages, with the pages its best pages point to."""

    def __init__(self, passages: PassageStore, store: PageStore | None) -> None:
        self.passages, self.store = passages, store
        self._titles: TitleIndex | None = None
        self.points_to = lru_cache(maxsize=65536)(self._points_to)

    @property
    def titles(self) -> TitleIndex | None:
        """The title index, read from the page store on first use (none without a store)."""
        if self._titles is None and self.store is not None:
            self._titles = TitleIndex(self.store)
        return self._titles

    def _points_to(self, docid: str) -> tuple[int, ...]:
        """Other pages a passage names: its page's links whose anchor it contains, and titles."""
        titles = self.titles
        passage = self.passages.get(docid)
        if titles is None or self.store is None or passage is None:
            return ()
        found = titles.mentioned(passage.text)
        text = f" {' '.join(words(passage.text))} "
        for link in self.store.links_from(passage.page_id):
            anchor = " ".join(words(link.anchor))
            target = titles.by_title.get(link.target)
            if target is not None and anchor and f" {anchor} " in text:
                found.add(target)
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
        titles = self.titles
        if titles is None or not ranked:
            return ranked
        best: dict[str, tuple[str, float]] = {}  # page -> its best passage and score
        for docid, score in ranked:
            best.setdefault(page_of(docid), (docid, score))
        bonus: dict[str, float] = {}
        for docid, score in list(best.values())[:expand_top]:
            targets = self.points_to(docid)
            _add(bonus, (str(t) for t in targets), mention_weight * score / max(len(targets), 1))
        top = ranked[0][1]
        _add(bonus, (str(t) for t in sorted(titles.mentioned(query))), query_title_weight * top)
        out = [(docid, score + bonus.get(page_of(docid), 0.0)) for docid, score in ranked]
        leads = self.passages.titles([f"{page}#0" for page in sorted(bonus) if page not in best])
        out += [(lead, bonus[page_of(lead)]) for lead in leads]  # pages with passages only
        return top_k(out, len(out))


def _add(bonus: dict[str, float], pages: Iterable[str], gain: float) -> None:
    if gain:
        for page in pages:
            bonus[page] = bonus.get(page, 0.0) + gain
