"""Densification: add the edges that already exist among graph nodes, so cycles form.

Why: expansion alone grows a tree outward from the seed; questions over trees are
answerable by walking one path. Links among kept nodes, and mentions of another node's
title or redirect alias in a page's text, close cycles (and are the only links a
WikiExtractor dump, which has no link markup, has at all).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from wikisim.corpus.page import Page
from wikisim.errors import ConfigError
from wikisim.synth.graph import MENTIONS, Edge, KnowledgeGraph

_TOKEN = re.compile(r"\w+(?:['’.\-]\w+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_PAREN = re.compile(r"\s*\([^)]*\)$")


@dataclass(frozen=True)
class DensifyConfig:
    max_chars: int = 6000  # scan this much of each page's text (the lead and first sections)
    max_tokens: int = 6  # longest title matched, in words
    min_chars: int = 4  # shorter titles ("It", "Ra") are ambiguous as mentions

    def __post_init__(self) -> None:
        if self.max_chars < 1 or self.max_tokens < 1 or self.min_chars < 1:
            raise ConfigError(f"DensifyConfig values must be >= 1, got {self}")


@dataclass(frozen=True)
class DensifyReport:
    pages_scanned: int
    mention_edges: int


def mention_keys(kg: KnowledgeGraph, config: DensifyConfig) -> dict[tuple[str, ...], int]:
    """Token tuple -> node, for titles, aliases and unambiguous parenthesis-stripped titles."""
    keys: dict[tuple[str, ...], int] = {}
    stripped: dict[tuple[str, ...], set[int]] = {}

    def usable(name: str) -> tuple[str, ...]:
        toks = tuple(_TOKEN.findall(name))
        if not toks or len(name) < config.min_chars or len(toks) > config.max_tokens:
            return ()
        return toks if toks[0][0].isupper() or toks[0][0].isdigit() else ()

    for n in sorted(kg.entities):
        title = kg.entities[n].title
        for name in (title, *kg.aliases.get(n, ())):
            toks = usable(name)
            if toks:
                keys.setdefault(toks, n)
        short = _PAREN.sub("", title)
        if short != title and (toks := usable(short)):
            stripped.setdefault(toks, set()).add(n)
    for toks, nodes in stripped.items():
        if toks not in keys and len(nodes) == 1:
            keys[toks] = next(iter(nodes))
    return keys


def densify(kg: KnowledgeGraph, pages: Iterable[Page], config: DensifyConfig | None = None) -> DensifyReport:
    """Add `mentions` edges src -> dst where src's text names dst (title or alias)."""
    config = config or DensifyConfig()
    keys = mention_keys(kg, config)
    max_len: dict[str, int] = {}
    for toks in keys:
        max_len[toks[0]] = max(max_len.get(toks[0], 0), len(toks))
    scanned = added = 0
    for page in pages:
        if page.id not in kg.entities:
            continue
        scanned += 1
        for sentence in _SENTENCE.split(page.text[: config.max_chars]):
            toks = _TOKEN.findall(sentence)
            for i, tok in enumerate(toks):
                longest = max_len.get(tok)
                if longest is None:
                    continue
                for n in range(min(longest, len(toks) - i), 0, -1):
                    dst = keys.get(tuple(toks[i : i + n]))
                    if dst is not None:
                        if dst != page.id and kg.add_edge(
                            Edge(page.id, dst, MENTIONS, sentence.strip()[:300], page.url, "mention")
                        ):
                            added += 1
                        break
    return DensifyReport(scanned, added)
