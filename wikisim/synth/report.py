"""Figures about a knowledge graph and a synthesis run, as JSON-ready dicts and PNGs.

Why these numbers: density, cycle rank and the share of nodes on a cycle show whether
densification did its job (cycles, not a sprawling tree); the run's histograms show what
the sampler kept and which uncertainty kinds the questions use.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx

from wikisim.synth.graph import KnowledgeGraph
from wikisim.synth.pipeline import SynthRun
from wikisim.synth.sample import structure_histogram


def graph_stats(kg: KnowledgeGraph) -> dict[str, Any]:
    g = kg.to_networkx()
    n, m = g.number_of_nodes(), g.number_of_edges()
    components = nx.number_connected_components(g) if n else 0
    on_cycle: set[int] = set()
    for comp in nx.biconnected_components(g):
        if len(comp) >= 3:
            on_cycle |= comp
    relations = Counter(r for rels in kg.edges.values() for r in rels)
    return {
        "nodes": n,
        "edges": kg.n_edges(),
        "undirected_edges": m,
        "density": nx.density(g) if n > 1 else 0.0,
        "cycle_rank": m - n + components,
        "components": components,
        "share_on_cycle": len(on_cycle) / n if n else 0.0,
        "clustering": nx.average_clustering(g) if n else 0.0,
        "kinds": dict(sorted(Counter(e.kind for e in kg.entities.values()).items())),
        "top_relations": dict(relations.most_common(12)),
        "mention_edges": sum(e.origin == "mention" for rels in kg.edges.values() for e in rels.values()),
    }


def run_stats(kg: KnowledgeGraph, run: SynthRun) -> dict[str, Any]:
    kinds = Counter(k for r in run.records for k in r["uncertainty"])
    orbit_sizes = Counter(len(r["orbit"]) for r in run.records)
    hist = structure_histogram(kg, run.subgraphs)
    kept = len(run.records)
    return {
        "questions": kept,
        "attempts": run.attempts,
        "acceptance_rate": kept / run.attempts if run.attempts else 0.0,
        "drops": dict(sorted(run.drops.items())),
        "sampler": run.sampler_stats,
        "subgraphs_used": len(run.subgraphs),
        "cyclic_share": hist["shape"]["cyclic"] / max(1, len(run.subgraphs)),
        "structures": hist,
        "uncertainty": dict(sorted(kinds.items())),
        "answer_orbit_sizes": dict(sorted((str(k), v) for k, v in orbit_sizes.items())),
        "distinct_wl_hashes": len({r["wl_hash"] for r in run.records}),
        "distinct_shapes": len({shape_hash(r) for r in run.records}),
    }


def shape_hash(record: dict[str, Any]) -> str:
    """WL hash of a question's subgraph without labels: its bare topology (a 3-8 node tree has
    one of 46 shapes; graphs with cycles have thousands)."""
    g = nx.Graph()
    g.add_nodes_from((n["id"], {"x": ""}) for n in record["subgraph"]["nodes"])  # one constant label
    g.add_edges_from((e["u"], e["v"]) for e in record["subgraph"]["edges"])
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="x", iterations=3)


def plot_graph(kg: KnowledgeGraph, out_dir: Path, center: int | None = None) -> list[Path]:
    """Degree distribution and one node's neighbourhood, as PNGs in out_dir."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    g = kg.to_networkx()
    degrees = Counter(d for _, d in g.degree())
    fig, ax = plt.subplots(figsize=(5, 4))
    xs = sorted(k for k in degrees if k > 0)
    ax.loglog(xs, [degrees[k] for k in xs], "o", ms=3)
    ax.set_xlabel("degree")
    ax.set_ylabel("nodes")
    ax.set_title(f"degree distribution ({g.number_of_nodes()} nodes)")
    deg_png = out_dir / "degree_distribution.png"
    fig.tight_layout()
    fig.savefig(deg_png, dpi=100)
    plt.close(fig)

    if center is None:
        center = max(sorted(g.nodes), key=lambda n: (nx.clustering(g, n) * g.degree(n), -n))
    nbrs = sorted(g.neighbors(center), key=lambda n: (-g.degree(n), n))[:25]
    ego = g.subgraph([center, *nbrs])
    fig, ax = plt.subplots(figsize=(7, 6))
    pos = nx.spring_layout(ego, seed=0)
    nx.draw_networkx(ego, pos, ax=ax, node_size=80, font_size=6, with_labels=True,
                     labels={n: kg.entities[n].title[:20] for n in ego.nodes},
                     node_color=["tab:red" if n == center else "tab:blue" for n in ego.nodes])
    ax.set_title(f"neighbourhood of {kg.entities[center].title}")
    ax.axis("off")
    nb_png = out_dir / "neighbourhood.png"
    fig.tight_layout()
    fig.savefig(nb_png, dpi=100)
    plt.close(fig)
    return [deg_png, nb_png]
