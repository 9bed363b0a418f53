"""Query-focused snippets: the passage sentences that best match the query, capped in length.

Shared by every backend so that the same passage and query always give the same snippet.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache

import Stemmer

from wikisim.index.base import SNIPPET_CHARS
from wikisim.index.bm25s_import import STOPWORDS_EN
from wikisim.index.passages import split_sentences

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOP = frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str | None:
    """Stem of a lower-cased word, None for a stop word; cached: snippets stem every sentence."""
    return None if word in _STOP else _stemmer().stemWord(word)


def terms(text: str) -> list[str]:
    """Lower-cased, stop-worded, Snowball-stemmed tokens (the same analysis bm25s uses here)."""
    return [s for w in _TOKEN.findall(text.lower()) if (s := _stem(w)) is not None]


@lru_cache(maxsize=4096)
def _layout(text: str) -> tuple[tuple[str, ...], str, tuple[int, ...]]:
    """Sentences, the lower-cased text they make joined by spaces, and where each one ends."""
    sentences = tuple(split_sentences(text.replace("\n", " ")))
    lows = [sentence.lower() for sentence in sentences]  # "İ".lower() is two characters
    ends, pos = [], 0
    for low in lows:
        pos += len(low) + 1
        ends.append(pos)
    return sentences, " ".join(lows), tuple(ends)


@lru_cache(maxsize=1024)
def _query_forms(query: str) -> dict[str, str]:
    """Each query word and its stem -> the stem: found as word prefixes ("studi" in "studies").

    A word that starts with its own stem is left out: wherever it occurs the stem occurs
    too, at the same word start, and counts the same term.
    """
    forms: dict[str, str] = {}
    for word in _TOKEN.findall(query.lower()):
        stem = _stem(word)
        if stem is not None:
            if not word.startswith(stem):
                forms.setdefault(word, stem)
            forms.setdefault(stem, stem)
    return forms


def _matches(low: str, ends: Sequence[int], forms: dict[str, str]) -> list[int]:
    """Distinct query terms per sentence, found with str.find (a C scan, no per-word Python)."""
    found: list[set[str]] = [set() for _ in ends]
    for form, term in forms.items():
        i = low.find(form)
        while i >= 0:
            if i == 0 or not low[i - 1].isalnum():
                found[bisect_right(ends, i)].add(term)
            i = low.find(form, i + 1)
    return [len(f) for f in found]


def snippets(texts: Sequence[str], query: str, max_chars: int = SNIPPET_CHARS) -> list[str]:
    """One query's snippet of each text, as `snippet` makes it, matched in one scan.

    The texts are searched as one string (a NUL between them, which no query form crosses
    and which starts a word like the text's start does), so a query form costs one find
    loop for all the hits instead of one per hit.
    """
    layouts = [_layout(text) for text in texts]
    ends: list[int] = []
    offset = 0
    for _, low, own in layouts:
        ends.extend(offset + e for e in own)
        offset += len(low) + 1
    matched = _matches("\x00".join(low for _, low, _ in layouts), ends, _query_forms(query))
    out, first = [], 0
    for sentences, _, _ in layouts:
        out.append(_choose(sentences, matched[first : first + len(sentences)], max_chars))
        first += len(sentences)
    return out


def snippet(text: str, query: str, max_chars: int = SNIPPET_CHARS) -> str:
    """The sentences sharing most distinct query terms, kept in text order, up to `max_chars`.

    Sentences are ranked by (distinct query terms matched, earlier position); with no
    match the passage's opening is shown. A cut sentence ends with "...".
    """
    return snippets([text], query, max_chars)[0]


def _choose(sentences: tuple[str, ...], matched: list[int], max_chars: int) -> str:
    if not sentences:
        return ""
    ranked = sorted(range(len(sentences)), key=lambda i: (-matched[i], i))
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
