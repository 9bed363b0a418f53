"""Query-focused snippets: the passage sentences that best match the query, capped in length.

Shared by every backend so that the same passage and query always give the same snippet.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from wikisim.index.passages import split_sentences

SNIPPET_CHARS = 300
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOP = frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def terms(text: str) -> list[str]:
    """Lower-cased, stop-worded, Snowball-stemmed tokens (the same analysis bm25s uses here)."""
    words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOP]
    return _stemmer().stemWords(words)


def snippet(text: str, query: str, max_chars: int = SNIPPET_CHARS) -> str:
    """The sentences sharing most distinct query terms, kept in text order, up to `max_chars`.

    Sentences are ranked by (distinct query terms matched, earlier position); with no
    match the passage's opening is shown. A cut sentence ends with "...".
    """
    sentences = split_sentences(text.replace("\n", " "))
    if not sentences:
        return ""
    wanted = set(terms(query))
    ranked = sorted(
        range(len(sentences)),
        key=lambda i: (-len(wanted.intersection(terms(sentences[i]))), i),
    )
    chosen: list[int] = []
    used = 0
    for i in ranked:
        cost = len(sentences[i]) + (1 if chosen else 0)
        if used + cost > max_chars:
            if not chosen:
                return _cut(sentences[i], max_chars)
            continue
        chosen.append(i)
        used += cost
    return " ".join(sentences[i] for i in sorted(chosen))


def _cut(sentence: str, max_chars: int) -> str:
    head = sentence[: max_chars - 3]
    space = head.rfind(" ")
    return (head[:space] if space > max_chars // 2 else head).rstrip() + "..."
