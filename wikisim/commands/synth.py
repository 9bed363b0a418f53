"""`wikisim synth --index DIR --n N --seed S --out FILE`: verified SailorFog-QA-V2 questions.

Writes FILE (every question, in generation order, each with its split) and
FILE's stem + -train/-dev/-test.jsonl beside it; the same seed gives the same bytes for any
--workers. A report (facts, structures, uncertainty kinds, drops) goes to stem + .report.json.
The fact table (typed facts of every page, SQLite) is cached under the index's manifest hash.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--index", required=True, type=Path, help="a built index directory (wikisim build)"
    )
    parser.add_argument("--n", type=int, required=True, help="questions to keep")
    parser.add_argument(
        "--seed", type=int, default=0, help="the one seed of sampling and rendering"
    )
    parser.add_argument("--out", required=True, type=Path, help="output JSONL file")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes (output is the same for any N)"
    )
    parser.add_argument(
        "--per-subgraph", type=int, default=2, help="questions per subgraph, one per orbit"
    )
    parser.add_argument(
        "--tree-only", action="store_true", help="V1-style baseline: walk trees, no cycles"
    )
    parser.add_argument(
        "--expand-seeds",
        type=int,
        default=0,
        help="grow the graph from this many seed pages with search/visit (0: whole store)",
    )
    parser.add_argument("--expand-nodes", type=int, default=500, help="pages expansion may reach")
    parser.add_argument(
        "--facts",
        type=Path,
        default=None,
        help="the fact table's SQLite file (default: in the cache, keyed by the index)",
    )
    parser.add_argument(
        "--rebuild-facts", action="store_true", help="rebuild the fact table even if cached"
    )
    parser.add_argument(
        "--plots", type=Path, default=None, help="write degree/neighbourhood PNGs here"
    )
    parser.add_argument(
        "--rewrite-url",
        default=None,
        help="OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1) to paraphrase questions",
    )
    parser.add_argument("--rewrite-model", default="default", help="model name for --rewrite-url")
    parser.add_argument(
        "--keep-giveaways",
        action="store_true",
        help="keep questions whose search puts the answer's page first (dropped by default)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def run(args: argparse.Namespace) -> int:
    from wikisim.index import open_index
    from wikisim.synth.expand import ExpandConfig
    from wikisim.synth.pipeline import SynthConfig, generate
    from wikisim.synth.report import graph_stats, plot_graph, run_stats
    from wikisim.synth.sample import SampleConfig
    from wikisim.synth.source import default_path, facts_from_store
    from wikisim.synth.splits import SPLITS, assign_splits

    start = time.perf_counter()
    index = open_index(args.index)
    from wikisim.backends.wiki import WikiBackend
    from wikisim.synth.solvability import search_gives_away, usable_retriever

    retriever = usable_retriever(index)
    backend = WikiBackend(index, retriever=retriever)
    path = args.facts or default_path(
        index.manifest_hash, args.expand_seeds, args.seed, args.expand_nodes
    )
    built = facts_from_store(
        index.store,
        path,
        backend=backend if args.expand_seeds else None,
        seeds=args.expand_seeds,
        seed=args.seed,
        expand_config=ExpandConfig(max_nodes=args.expand_nodes),
        rebuild=args.rebuild_facts,
    )
    config = SynthConfig(
        n=args.n,
        seed=args.seed,
        workers=args.workers,
        questions_per_subgraph=args.per_subgraph,
        sample=SampleConfig(tree_only=args.tree_only),
    )
    giveaway = None if args.keep_giveaways else search_gives_away(backend)
    synth = generate(
        built.db, config, index.manifest_hash, progress=not args.quiet, giveaway=giveaway
    )
    records = synth.records
    if args.rewrite_url:
        from wikisim.synth.rewrite import Rewriter

        records, lost = Rewriter(args.rewrite_url, args.rewrite_model).rewrite_all(records)
        synth.drops["rewrite_lost_constraint"] += lost
    splits = assign_splits(records)
    for r in records:
        r["split"] = splits[r["id"]]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out, records)
    stem = args.out.with_suffix("")
    for name in SPLITS:
        write_jsonl(Path(f"{stem}-{name}.jsonl"), [r for r in records if r["split"] == name])
    report = {
        "facts": graph_stats(built.db),
        "run": run_stats(built.db, synth),
        "splits": {s: sum(r["split"] == s for r in records) for s in SPLITS},
        "seed": args.seed,
        "manifest_hash": index.manifest_hash,
        "tree_only": args.tree_only,
        "giveaway_retriever": None if args.keep_giveaways else retriever,
    }
    if built.expansion is not None:
        report["expansion"] = {
            "pages": len(built.expansion.found),
            "queries": built.expansion.queries,
            "visits": built.expansion.visits,
            "found_by": {
                v: sum(d.via == v for d in built.expansion.found)
                for v in ("seed", "search", "visit")
            },
        }
    Path(f"{stem}.report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    if args.plots is not None:
        plot_graph(built.db, args.plots)
    secs = time.perf_counter() - start
    run_fig = report["run"]
    print(
        f"{len(records)} questions -> {args.out} ({secs:.1f} s); acceptance {run_fig['acceptance_rate']:.2f}, "
        f"cyclic subgraphs {run_fig['cyclic_share']:.2f}, kinds {sorted(run_fig['uncertainty'])}",
        file=sys.stderr,
    )
    if len(records) < args.n:
        print(
            f"only {len(records)} of {args.n} questions before the walk budget ran out; "
            "use a larger corpus or fewer questions",
            file=sys.stderr,
        )
    return 0
