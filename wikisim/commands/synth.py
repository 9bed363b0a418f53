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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikisim.flags import add_config_arguments, config_from_args, option


@dataclass(frozen=True)
class SynthOptions:
    """What `wikisim synth` is asked for (every field a flag and a YAML key)."""

    index: str = option("", "a built index directory (wikisim build)", required=True)
    n: int = option(0, "questions to keep", required=True)
    seed: int = option(0, "the one seed of sampling and rendering")
    out: str = option("", "output JSONL file", required=True)
    workers: int = option(1, "processes (output is the same for any N)")
    per_subgraph: int = option(2, "questions per subgraph, one per orbit")
    tree_only: bool = option(False, "V1-style baseline: walk trees, no cycles")
    expand_seeds: int = option(
        0, "grow the graph from this many seed pages with search/visit (0: whole store)"
    )
    expand_nodes: int = option(500, "pages expansion may reach")
    facts: str | None = option(
        None, "the fact table's SQLite file (None: in the cache, keyed by the index)"
    )
    rebuild_facts: bool = option(False, "rebuild the fact table even if cached")
    plots: str | None = option(None, "write degree/neighbourhood PNGs here")
    rewrite_url: str | None = option(
        None, "OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1) to paraphrase questions"
    )
    rewrite_model: str = option("default", "model name for --rewrite-url")
    keep_giveaways: bool = option(
        False, "keep questions whose search puts the answer's page first (dropped by default)"
    )
    quiet: bool = option(False, "no progress bar")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, SynthOptions)


def write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def run(args: argparse.Namespace) -> int:
    return synthesize(config_from_args(SynthOptions, args))


def synthesize(args: SynthOptions) -> int:
    """Generate, verify and write the questions `args` asks for, with their report."""
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
    from wikisim.synth.solvability import search_gives_away

    retriever = index.default_retriever
    backend = WikiBackend(index, retriever=retriever)
    path = (
        Path(args.facts)
        if args.facts
        else default_path(index.manifest_hash, args.expand_seeds, args.seed, args.expand_nodes)
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
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, records)
    stem = out.with_suffix("")
    for name in SPLITS:
        write_jsonl(Path(f"{stem}-{name}.jsonl"), [r for r in records if r["split"] == name])
    report: dict[str, Any] = {
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
        plot_graph(built.db, Path(args.plots))
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
