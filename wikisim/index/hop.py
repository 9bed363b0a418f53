"""The default retriever's third stage: a second sparse retrieval hop from the best pages.

A multi-hop question's later pages are about what its first page answers ("the country
of citizenship of the director of Tic Tac": the film's page names Daniel Alfredson, whose
page may not exist, while the page that holds the next fact names him too). As in
multi-hop dense retrieval (Xiong et al. 2021, MDR), the question is searched again with
what the first hop found, here with the sparse side: the words of the question the first
hop's best passage lacks (what is left to ask) and that passage's names the question lacks
(its capitalised words and numbers: what it answers). The whole question and passage would
find pages like the passage (a multi-hop set's distractors are such pages); this query
finds pages about what the passage answers that say what is left.

For each of the `seeds` best pages, the pages the hop query ranks `1..top_pages` gain
`weight * seed_score / rank`; the seed's own page, which its names match, is ranked like
any other (usually first, so a seed keeps its place above the pages it lifts). A page the
ranking lacked enters with the passage the hop found. The weights were tuned on the TRAIN
halves only (bench/recall.py --tune).
"""

from __future__ import annotations

import re
from functools import lru_cache

from wikisim.index.expand import best_by_page, page_of
from wikisim.index.passages import PassageStore
from wikisim.index.ranked import Ranked, RankedRetriever, top_k
from wikisim.index.snippets import terms

_WORD = re.compile(r"\w+")
HOP_DEPTH = 50  # passages the hop query reads: room for `top_pages` pages past a long seed page


def bridge_query(question: str, passage: str) -> str:
    """The question's words the passage lacks, then the passage's names the question lacks.

    A word is lacking when not all its terms are in the other text (a stop word has no
    terms: "The" is never kept); a name is a word that starts with a capital or a digit.
    """
    found, asked = set(terms(passage)), set(terms(question))
    rest = [w for w in _WORD.findall(question) if not set(terms(w)) <= found]
    names = [
        w
        for w in _WORD.findall(passage)
        if (w[0].isupper() or w[0].isdigit()) and not set(terms(w)) <= asked
    ]
    return " ".join(rest + names)


class SecondHop:
    """Re-ranks a ranking with the pages a second sparse query from its best pages finds."""

    def __init__(self, sparse: RankedRetriever, passages: PassageStore) -> None:
        self.sparse, self.passages = sparse, passages
        self.found = lru_cache(maxsize=4096)(self._found)

    def _found(self, question: str, docid: str) -> tuple[tuple[str, str], ...]:
        """(page, its best passage) the hop query from `docid` ranks, best first."""
        passage = self.passages.get(docid)
        if passage is None:
            return ()
        hop = self.sparse.ranked([bridge_query(question, passage.text)], HOP_DEPTH)[0]
        return tuple((page, hit) for page, (hit, _) in best_by_page(hop).items())

    def rerank(
        self, question: str, ranked: Ranked, seeds: int, weight: float, top_pages: int
    ) -> Ranked:
        """`ranked` (best first) with each seed's hop pages' gains added; as it came with 0 seeds."""
        if not ranked or seeds == 0 or weight == 0.0 or top_pages == 0:
            return ranked
        best = best_by_page(ranked)
        bonus: dict[str, float] = {}
        enters: dict[str, str] = {}  # a page new to the ranking -> the passage the hop found
        for docid, score in list(best.values())[:seeds]:
            for rank, (page, hit) in enumerate(self.found(question, docid)[:top_pages], start=1):
                bonus[page] = bonus.get(page, 0.0) + weight * score / rank
                if page not in best:
                    enters.setdefault(page, hit)
        out = [(docid, score + bonus.get(page_of(docid), 0.0)) for docid, score in ranked]
        out += [(hit, bonus[page]) for page, hit in sorted(enters.items())]
        return top_k(out, len(out))
