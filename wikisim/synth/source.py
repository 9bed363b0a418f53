"""The fact table of a built index: the whole page store, or the pages expansion reached.

Why cached by the index's manifest hash: reading every page's facts is the slow part of a
small run; the table is a pure function of the store (and the expansion's seeds), so a
second run on the same index reuses it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from wikisim.backends.base import Backend
from wikisim.corpus.page import Page, Redirect
from wikisim.paths import cache_dir
from wikisim.synth.expand import ExpandConfig, Expansion, expand
from wikisim.synth.factdb import SCHEMA_VERSION, FactDB, PageSource, build_facts


@dataclass(frozen=True)
class FactBuild:
    db: FactDB
    expansion: Expansion | None


@dataclass(frozen=True)
class Subset:
    """The pages of `store` whose ids are in `include` (what an expansion found)."""

    store: PageSource
    include: frozenset[int]

    def pages(self) -> Iterator[Page]:
        return (p for p in self.store.pages() if p.id in self.include)

    def redirects(self) -> Iterable[Redirect]:
        return self.store.redirects()

    def titles(self) -> Iterator[tuple[int, str]]:
        return ((i, t) for i, t in self.store.titles() if i in self.include)


def default_path(manifest_hash: str, seeds: int = 0, seed: int = 0, max_nodes: int = 0) -> Path:
    tag = f"-expand{seeds}x{max_nodes}s{seed}" if seeds else ""
    return cache_dir() / "synth" / f"{manifest_hash or 'store'}{tag}.{SCHEMA_VERSION}.sqlite"


def facts_from_store(
    store: PageSource,
    path: str | Path,
    *,
    backend: Backend | None = None,
    seeds: int = 0,
    seed: int = 0,
    expand_config: ExpandConfig | None = None,
    rebuild: bool = False,
) -> FactBuild:
    """Every page of `store`; or, with a backend and seeds > 0, the pages that expansion from
    `seeds` seeded-random titles reaches through search and visit."""
    expansion = None
    source: PageSource = store
    if backend is not None and seeds > 0:
        titles = sorted(store.titles())
        rng = random.Random(seed)
        picks = [
            titles[i][1] for i in sorted(rng.sample(range(len(titles)), min(seeds, len(titles))))
        ]
        expansion = expand(backend, titles, picks, expand_config)
        source = Subset(store, frozenset(expansion.include()))
    path = Path(path)
    if rebuild or not path.exists():
        tmp = path.with_suffix(
            f".tmp-{os.getpid()}"
        )  # processes building it at once never share one
        build_facts(source, tmp)
        tmp.replace(path)
    return FactBuild(FactDB(path), expansion)
