"""The knowledge graph of a built index: the whole page store, or what expansion reached."""

from __future__ import annotations

import random
from dataclasses import dataclass

from wikisim.backends.base import Backend
from wikisim.synth.densify import DensifyConfig, DensifyReport, densify
from wikisim.synth.expand import ExpandConfig, Expansion, expand
from wikisim.synth.graph import KnowledgeGraph, build_graph


@dataclass(frozen=True)
class GraphBuild:
    kg: KnowledgeGraph
    densify: DensifyReport
    expansion: Expansion | None


def graph_from_store(store, *, backend: Backend | None = None, seeds: int = 0, seed: int = 0,
                     expand_config: ExpandConfig | None = None,
                     densify_config: DensifyConfig | None = None) -> GraphBuild:
    """Every page of `store` as a node; or, with a backend and seeds > 0, the pages that
    expansion from `seeds` seeded-random titles reaches. Densified either way."""
    expansion = None
    include = None
    if backend is not None and seeds > 0:
        titles = sorted(store.titles())
        rng = random.Random(seed)
        picks = [titles[i][1] for i in sorted(rng.sample(range(len(titles)), min(seeds, len(titles))))]
        expansion = expand(backend, titles, picks, expand_config)
        include = expansion.include()
    kg = build_graph(store.pages(), store.redirects(), include=include)
    report = densify(kg, store.pages(), densify_config)
    return GraphBuild(kg, report, expansion)
