"""Which other pages a page's lead names: co-occurrence for the walk, never a stated fact.

Why: a dump without link markup (WikiExtractor output) has no links at all; names of other
pages in a lead are what connects its pages, so random walks can close cycles. Questions
never state these edges: they only let the walker reach entities whose typed facts meet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"\w+(?:['’.\-]\w+)*")
_PAREN = re.compile(r"\s*\([^)]*\)$")


class MentionFinder:
    """Token tuples of titles (and unambiguous parenthesis-free titles) -> title."""

    def __init__(self, titles: Iterable[str], min_chars: int = 4, max_tokens: int = 6) -> None:
        self.keys: dict[tuple[str, ...], str] = {}
        stripped: dict[tuple[str, ...], set[str]] = {}

        def usable(name: str) -> tuple[str, ...]:
            toks = tuple(_TOKEN.findall(name))
            if not toks or len(name) < min_chars or len(toks) > max_tokens:
                return ()
            return toks if toks[0][0].isupper() or toks[0][0].isdigit() else ()

        for title in titles:
            if toks := usable(title):
                self.keys.setdefault(toks, title)
            short = _PAREN.sub("", title)
            if short != title and (toks := usable(short)):
                stripped.setdefault(toks, set()).add(title)
        for toks, found in stripped.items():
            if toks not in self.keys and len(found) == 1:
                self.keys[toks] = next(iter(found))
        self.longest: dict[str, int] = {}
        for toks in self.keys:
            self.longest[toks[0]] = max(self.longest.get(toks[0], 0), len(toks))

    def find(self, text: str) -> list[str]:
        """Titles named in text, longest match first at each position, in order, without repeats."""
        toks = _TOKEN.findall(text)
        out: dict[str, None] = {}
        i = 0
        while i < len(toks):
            longest = self.longest.get(toks[i])
            step = 1
            if longest is not None:
                for n in range(min(longest, len(toks) - i), 0, -1):
                    title = self.keys.get(tuple(toks[i : i + n]))
                    if title is not None:
                        out[title] = None
                        step = n
                        break
            i += step
        return list(out)
