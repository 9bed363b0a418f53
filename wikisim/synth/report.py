"""Figures about a fact table and a synthesis run, as JSON-ready dicts and PNGs.

Why these numbers: facts by relation and by source show what the questions can be made of;
the run's histograms show what the sampler kept (cyclic subgraphs, and cycles of typed facts
alone), which uncertainty kinds and answer kinds the questions use, and their levels.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx

from wikisim.synth.factdb import FactDB
from wikisim.synth.pipeline import SynthRun
from wikisim.synth.sample import structure_histogram


def graph_stats(db: FactDB) -> dict[str, Any]:
    """What the fact table holds: entities by kind, facts by relation and source, the walk graph."""
    q = db.histogram
    return {
        **db.counts(),
        "kinds": q("SELECT kind, count(*) FROM entity GROUP BY kind ORDER BY kind"),
        "answerable": q(
            "SELECT page, count(*) FROM entity WHERE hub = 0 GROUP BY page ORDER BY page"
        ),
        "by_relation": q("SELECT r, count(*) FROM rel GROUP BY r ORDER BY 2 DESC, 1"),
        "relation_sources": q("SELECT source, count(*) FROM rel GROUP BY source ORDER BY source"),
        "by_attribute": q("SELECT a, count(*) FROM attr GROUP BY a ORDER BY 2 DESC, 1"),
        "attribute_sources": q("SELECT source, count(*) FROM attr GROUP BY source ORDER BY source"),
    }


def run_stats(db: FactDB, run: SynthRun) -> dict[str, Any]:
    kinds = Counter(k for r in run.records for k in r["uncertainty"])
    orbit_sizes = Counter(len(r["orbit"]) for r in run.records)
    hist = structure_histogram(db, run.subgraphs)
    kept = len(run.records)
    return {
        "questions": kept,
        "attempts": run.attempts,
        "acceptance_rate": kept / run.attempts if run.attempts else 0.0,
        "drops": dict(sorted(run.drops.items())),
        "sampler": run.sampler_stats,
        "subgraphs_used": len(run.subgraphs),
        "cyclic_share": hist["shape"]["cyclic"] / max(1, len(run.subgraphs)),
        "typed_cyclic_share": hist["shape"]["typed_cyclic"] / max(1, len(run.subgraphs)),
        "answer_kinds": dict(sorted(Counter(r["answer_kind"] for r in run.records).items())),
        "answers_with_page": sum(r["answer_has_page"] for r in run.records),
        "levels": dict(sorted(Counter(str(r["level"]) for r in run.records).items())),
        "fact_sources": dict(
            sorted(
                Counter(
                    f.get("source", "attribute") for r in run.records for f in r["evidence_facts"]
                ).items()
            )
        ),
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
    g.add_nodes_from(
        (n["id"], {"x": ""}) for n in record["subgraph"]["nodes"]
    )  # one constant label
    g.add_edges_from((e["u"], e["v"]) for e in record["subgraph"]["edges"])
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="x", iterations=3)


def plot_graph(db: FactDB, out_dir: Path) -> list[Path]:
    """Degree distribution of the walk graph, and the neighbourhood of its best-connected entity, as PNGs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    degrees = Counter(d for (d,) in db.db.execute("SELECT count(*) FROM adj GROUP BY n"))
    fig, ax = plt.subplots(figsize=(5, 4))
    xs = sorted(degrees)
    ax.loglog(xs, [degrees[k] for k in xs], "o", ms=3)
    ax.set_xlabel("degree")
    ax.set_ylabel("entities")
    ax.set_title(f"walk graph degrees ({db.n_starts} entities)")
    deg_png = out_dir / "degree_distribution.png"
    fig.tight_layout()
    fig.savefig(deg_png, dpi=100)
    plt.close(fig)

    center = db.db.execute(
        "SELECT n FROM adj GROUP BY n ORDER BY count(*) DESC, n LIMIT 1"
    ).fetchone()[0]
    nbrs = list(db.adj(center))[:25]
    g = nx.Graph()
    for n in [center, *nbrs]:
        g.add_node(n)
        for m in db.adj(n):
            if m in nbrs or m == center:
                g.add_edge(n, m)
    fig, ax = plt.subplots(figsize=(7, 6))
    pos = nx.spring_layout(g, seed=0)
    nx.draw_networkx(
        g,
        pos,
        ax=ax,
        node_size=80,
        font_size=6,
        with_labels=True,
        labels={n: db.entity(n).title[:20] for n in g.nodes},
        node_color=["tab:red" if n == center else "tab:blue" for n in g.nodes],
    )
    ax.set_title(f"neighbourhood of {db.entity(center).title}")
    ax.axis("off")
    nb_png = out_dir / "neighbourhood.png"
    fig.tight_layout()
    fig.savefig(nb_png, dpi=100)
    plt.close(fig)
    return [deg_png, nb_png]
