"""Seeded random walks with restarts that collect connected 3-8 node subgraphs, WL-deduplicated.

Why walks, not enumeration: the number of connected k-node subgraphs of a dense graph
explodes; a walk finds one in O(k) steps, asking the fact table only for the neighbours it
visits, so its cost does not depend on the dump's size. Walk edges are typed facts and
link co-occurrence among non-hub entities; edge labels are the typed relations, or "link". Why Weisfeiler-Leman: two subgraphs with the same
hash (over node kinds and edge relations) give questions of the same shape, so only the
first is kept. WL hashes change across networkx versions: `WL_VERSION` goes beside them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import networkx as nx

from wikisim.errors import ConfigError
from wikisim.synth.factdb import FactDB

WL_VERSION = f"networkx-{nx.__version__}-wl3"


@dataclass(frozen=True)
class SampleConfig:
    min_nodes: int = 3
    max_nodes: int = 8
    restart_prob: float = 0.2  # jump back to the start node: keeps the walk local, closes cycles
    close_prob: float = (
        0.6  # chance a step prefers a neighbour that closes a cycle (SailorFog-V2's dense graphs)
    )
    steps_per_node: int = 12  # a walk gives up after steps_per_node * k steps
    max_walks: int = 200_000  # the budget: stop after this many walks even if N is not reached
    tree_only: bool = False  # V1-style baseline: keep only the walk's discovery edges (a tree)

    def __post_init__(self) -> None:
        if not 2 <= self.min_nodes <= self.max_nodes <= 12:
            raise ConfigError(
                f"need 2 <= min_nodes <= max_nodes <= 12, got {self.min_nodes}..{self.max_nodes}"
            )
        if not 0.0 <= self.close_prob <= 1.0:
            raise ConfigError(f"close_prob must be in [0, 1], got {self.close_prob}")
        if not 0.0 <= self.restart_prob < 1.0:
            raise ConfigError(f"restart_prob must be in [0, 1), got {self.restart_prob}")
        if self.steps_per_node < 1 or self.max_walks < 1:
            raise ConfigError(f"steps_per_node and max_walks must be >= 1, got {self}")


@dataclass(frozen=True)
class Subgraph:
    """Nodes (sorted page ids) and undirected labelled edges (u < v), with its WL hash."""

    nodes: tuple[int, ...]
    edges: tuple[tuple[int, int, str], ...]
    wl_hash: str
    walk: int  # index of the walk that found it: with the seed, enough to reproduce it

    def to_networkx(self, db: FactDB) -> nx.Graph:
        return labelled_graph(db, self.nodes, self.edges)

    @property
    def cyclic(self) -> bool:
        return len(self.edges) >= len(self.nodes)  # connected: a tree has exactly n - 1 edges

    @property
    def typed_cyclic(self) -> bool:
        """A cycle among its typed-fact edges alone (link co-occurrence left out)."""
        g = nx.Graph((u, v) for u, v, rel in self.edges if rel != LINK)
        return g.number_of_edges() > 0 and bool(nx.cycle_basis(g))


LINK = "link"
MAX_SCAN = 64  # neighbours examined for closing a cycle at one step


def pair_label(db: FactDB, u: int, v: int) -> str:
    """The typed relations between u and v, direction dropped, sorted and '|'-joined; else "link"."""
    return "|".join(sorted({r for r, _ in db.relations(u, v)})) or LINK


def labelled_graph(
    db: FactDB, nodes: tuple[int, ...], edges: tuple[tuple[int, int, str], ...]
) -> nx.Graph:
    g = nx.Graph()
    for n in nodes:
        g.add_node(n, kind=db.entity(n).kind)
    for u, v, rel in edges:
        g.add_edge(u, v, relation=rel)
    return g


def wl_hash(g: nx.Graph) -> str:
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="kind", edge_attr="relation", iterations=3)


@dataclass
class SampleStats:
    walks: int = 0
    too_small: int = 0
    duplicates: int = 0
    kept: int = 0
    seen: set[str] = field(default_factory=set)


class Sampler:
    """Walks over a fixed sorted adjacency, so a seed gives the same subgraphs in any process."""

    def __init__(self, db: FactDB, config: SampleConfig | None = None) -> None:
        self.db = db
        self.config = config or SampleConfig()
        if not db.n_starts:
            raise ConfigError(f"the fact table {db.path} has no walk edges: use a larger corpus")
        self.stats = SampleStats()

    def walk(self, rng: random.Random, walk_index: int) -> Subgraph | None:
        cfg = self.config
        k = rng.randint(cfg.min_nodes, cfg.max_nodes)
        start = self.db.start(rng.randrange(self.db.n_starts))
        visited = [start]
        seen = {start}
        tree: list[tuple[int, int]] = []
        cur = start
        for _ in range(cfg.steps_per_node * k):
            if len(visited) == k:
                break
            if cur != start and rng.random() < cfg.restart_prob:
                cur = visited[rng.randrange(len(visited))] if cfg.tree_only else start
                continue
            nbrs = self.db.adj(cur)
            nxt = nbrs[rng.randrange(len(nbrs))]
            if not cfg.tree_only and len(visited) > 1 and rng.random() < cfg.close_prob:
                closing = [
                    m
                    for m in nbrs[:MAX_SCAN]
                    if m not in seen and len(seen.intersection(self.db.adj(m))) > 1
                ]
                if closing:  # a neighbour tied to two visited nodes closes a cycle
                    nxt = closing[rng.randrange(len(closing))]
            if nxt not in seen:
                seen.add(nxt)
                visited.append(nxt)
                tree.append((min(cur, nxt), max(cur, nxt)))
            cur = nxt
        if len(visited) < cfg.min_nodes:
            return None
        nodes = tuple(sorted(visited))
        if cfg.tree_only:
            pairs = sorted(tree)
        else:
            pairs = sorted((u, v) for u in nodes for v in self.db.adj(u) if u < v and v in seen)
        edges = tuple((u, v, pair_label(self.db, u, v)) for u, v in pairs)
        return Subgraph(nodes, edges, wl_hash(labelled_graph(self.db, nodes, edges)), walk_index)

    def sample(self, seed: int, n: int | None = None) -> Iterator[Subgraph]:
        """Distinct (by WL hash) subgraphs until n are kept or the walk budget runs out."""
        rng = random.Random(seed)
        stats = self.stats = SampleStats()
        while stats.walks < self.config.max_walks and (n is None or stats.kept < n):
            sub = self.walk(rng, stats.walks)
            stats.walks += 1
            if sub is None:
                stats.too_small += 1
            elif sub.wl_hash in stats.seen:
                stats.duplicates += 1
            else:
                stats.seen.add(sub.wl_hash)
                stats.kept += 1
                yield sub


def structure_histogram(db: FactDB, subs: list[Subgraph]) -> dict[str, dict[str, int]]:
    """Counts by size, by tree vs cyclic, and by diameter."""
    size: dict[str, int] = {}
    shape = {"tree": 0, "cyclic": 0, "typed_cyclic": 0}
    diameter: dict[str, int] = {}
    for s in subs:
        size[str(len(s.nodes))] = size.get(str(len(s.nodes)), 0) + 1
        shape["cyclic" if s.cyclic else "tree"] += 1
        shape["typed_cyclic"] += s.typed_cyclic
        d = str(nx.diameter(s.to_networkx(db)))
        diameter[d] = diameter.get(d, 0) + 1
    return {
        "size": dict(sorted(size.items(), key=lambda kv: int(kv[0]))),
        "shape": shape,
        "diameter": dict(sorted(diameter.items(), key=lambda kv: int(kv[0]))),
    }
