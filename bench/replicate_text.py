"""A large plain-text corpus made by replicating real pages under new names, for scale benchmarks.

Why not bench/replicate.py (which copies a MediaWiki dump's wikitext): parsing wikitext costs
~0.1 s a page here, so 100k pages of it take hours; plain-text pages (WikiExtractor, 2Wiki)
convert in microseconds. Copy k of a page gets a new title (a word added to its name, before
any parenthesis: "Mercury (planet)" -> "Mercury Bravo (planet)") and, in its lead, every
name of a pool page is rewired to copy k of that page, so copy k's facts and mentions point
at copy k: the corpus is k disjoint copies of the real graph, with names that still parse as
names. The same pool and N give the same pages, in the same order, with ids 1..N.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from wikisim.corpus.page import Page
from wikisim.errors import ConfigError
from wikisim.synth.mentions import _TOKEN, MentionFinder

WORDS = (
    "Alpha",
    "Bravo",
    "Charlie",
    "Delta",
    "Echo",
    "Foxtrot",
    "Golf",
    "Hotel",
    "India",
    "Juliett",
    "Kilo",
    "Lima",
    "Mike",
    "November",
    "Oscar",
    "Papa",
    "Quebec",
    "Romeo",
    "Sierra",
    "Tango",
    "Uniform",
    "Victor",
)
LEAD_CHARS = 2000  # what fact extraction reads; the rest of a copy's text is kept as it is
_PAREN = re.compile(r"^(.*?)(\s*\([^)]*\))?$")


def copy_name(title: str, k: int) -> str:
    if k == 0:
        return title
    if k > len(WORDS):
        raise ConfigError(f"at most {len(WORDS) + 1} copies of a pool page; use a larger pool")
    m = _PAREN.match(title)
    return f"{m.group(1)} {WORDS[k - 1]}{m.group(2) or ''}"


def _rewire(text: str, k: int, finder: MentionFinder) -> str:
    """The lead with every pool page's name replaced by copy k's name."""
    lead, rest = text[:LEAD_CHARS], text[LEAD_CHARS:]
    out: list[str] = []
    at = 0
    spans = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(lead)]
    i = 0
    while i < len(spans):
        longest = finder.longest.get(spans[i][2])
        step = 1
        if longest:
            for n in range(min(longest, len(spans) - i), 0, -1):
                title = finder.keys.get(tuple(s[2] for s in spans[i : i + n]))
                if title is not None:
                    start, end = spans[i][0], spans[i + n - 1][1]
                    shown = lead[start:end]
                    out += [lead[at:start], f"{shown} {WORDS[k - 1]}"]
                    at, step = end, n
                    break
        i += step
    return "".join(out) + lead[at:] + rest


def replicated(pool: Sequence[Page], n_pages: int) -> Iterator[Page]:
    """N pages: copy 0 of the pool, then copy 1, ..., each renamed and rewired; ids 1..N."""
    if n_pages < 1 or not pool:
        raise ConfigError(
            f"need a non-empty pool and n_pages >= 1, got {len(pool)} pages and {n_pages}"
        )
    finder = MentionFinder(p.title for p in pool)
    for i in range(n_pages):
        k, page = divmod(i, len(pool))
        p = pool[page]
        if k == 0:
            yield replace(p, id=i + 1)
            continue
        text = _rewire(p.text, k, finder)
        yield replace(
            p,
            id=i + 1,
            title=copy_name(p.title, k),
            url="",
            text=text,
            description=text.split("\n", 1)[0][:400],
            sections=(),
        )
