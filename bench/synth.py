"""Benchmark of question synthesis: speed, acceptance, structure diversity, against the tree-only baseline.

    .venv/bin/python bench/synth.py [--n 1000] [--seed 0] [--skip-scaling] [--skip-solvability]

Reads the 6,514-article WikiExtractor set (no link markup: its edges are title mentions) and
the 2Wiki corpus from /work/shared/data. Writes bench/results/synth.json and PNGs there.
Figures: verified questions/s on one core, acceptance rate, share of cyclic subgraphs,
distinct structures per 1,000 questions, uncertainty kinds, independent re-verification
rate; time against graph size (1k, 5k, 6.5k, ~15k pages); oracle and top-hit rates on the
bundled sample through the env's WikiBackend. Ratios are against a tree-only (V1-style)
sampler run in the same process.
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from wikisim.corpus import read_pages
from wikisim.corpus.page import Page
from wikisim.synth.densify import densify
from wikisim.synth.graph import build_graph
from wikisim.synth.pipeline import SynthConfig, generate
from wikisim.synth.report import graph_stats, plot_graph, run_stats
from wikisim.synth.sample import SampleConfig
from wikisim.synth.uncertainty import UNCERTAINTY_KINDS
from wikisim.synth.verify import Reverifier

SHARED = Path("/work/shared/data")
RESULTS = Path(__file__).resolve().parent / "results"


def load_pages(paths: list[Path]) -> list[Page]:
    return [p for p in read_pages(paths) if isinstance(p, Page)]


def wikiextractor_pages(tmp: Path) -> list[Page]:
    with tarfile.open(SHARED / "enwiki-2015-wikiextractor-6514.tar.xz") as tar:
        tar.extractall(tmp, filter="data")
    files = sorted(p for p in tmp.rglob("*") if p.is_file())
    return load_pages(files)


def renumber(pages: list[Page]) -> list[Page]:
    """Distinct ids and titles when corpora are combined (first title wins)."""
    seen: set[str] = set()
    out = []
    for p in pages:
        if p.title not in seen:
            seen.add(p.title)
            out.append(replace(p, id=len(out) + 1))
    return out


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def graph_and_run(pages: list[Page], n: int, seed: int, tree_only: bool = False) -> dict[str, Any]:
    kg, t_graph = timed(lambda: build_graph(pages))
    dens, t_dens = timed(lambda: densify(kg, pages))
    config = SynthConfig(n=n, seed=seed, sample=SampleConfig(tree_only=tree_only))
    run, t_gen = timed(lambda: generate(kg, config, progress=False))
    return {"kg": kg, "run": run, "pages": len(pages), "graph_s": t_graph, "densify_s": t_dens,
            "generate_s": t_gen, "q_per_s": len(run.records) / t_gen, "mention_edges": dens.mention_edges}


def structures_per_1000(run) -> float:
    return 1000 * len({r["wl_hash"] for r in run.records}) / max(1, len(run.records))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--skip-solvability", action="store_true")
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"n": args.n, "seed": args.seed}

    with tempfile.TemporaryDirectory() as tmp:
        pages, t_load = timed(lambda: wikiextractor_pages(Path(tmp)))
    print(f"6,514 set: {len(pages)} pages loaded in {t_load:.1f} s")

    main_run = graph_and_run(pages, args.n, args.seed)
    kg, run = main_run["kg"], main_run["run"]
    gstats = graph_stats(kg)
    rstats = run_stats(kg, run)
    checker = Reverifier(kg)
    verdicts, t_rev = timed(lambda: [checker.check(r) for r in run.records])
    reverified = sum(v.ok for v in verdicts) / max(1, len(verdicts))
    tree = graph_and_run(pages, args.n, args.seed, tree_only=True)
    tstats = run_stats(tree["kg"], tree["run"])
    plot_graph(kg, RESULTS / "synth-6514")
    kinds = set(rstats["uncertainty"])
    out["wikiextractor_6514"] = {
        "graph": gstats, "run": rstats, "graph_s": main_run["graph_s"], "densify_s": main_run["densify_s"],
        "generate_s": main_run["generate_s"], "verified_q_per_s_one_core": main_run["q_per_s"],
        "reverified_share": reverified, "reverify_s": t_rev,
        "structures_per_1000": structures_per_1000(run),
        "all_uncertainty_kinds": kinds == set(UNCERTAINTY_KINDS),
        "missing_kinds": sorted(set(UNCERTAINTY_KINDS) - kinds),
    }
    out["tree_only_6514"] = {"run": tstats, "generate_s": tree["generate_s"], "q_per_s": tree["q_per_s"],
                             "structures_per_1000": structures_per_1000(tree["run"])}
    print(f"graph: {gstats['nodes']} nodes, {gstats['edges']} edges ({gstats['mention_edges']} from mentions), "
          f"density {gstats['density']:.5f}, cycle rank {gstats['cycle_rank']}, on a cycle "
          f"{gstats['share_on_cycle']:.2f}, clustering {gstats['clustering']:.3f} "
          f"(build {main_run['graph_s']:.1f} s + densify {main_run['densify_s']:.1f} s)")
    print(f"synth: {len(run.records)} verified questions in {main_run['generate_s']:.1f} s = "
          f"{main_run['q_per_s']:.1f} q/s on one core (target >= 20); acceptance {rstats['acceptance_rate']:.2f}; "
          f"drops {rstats['drops']}")
    print(f"  cyclic subgraphs {rstats['cyclic_share']:.2f} vs tree-only {tstats['cyclic_share']:.2f} "
          f"(target >= 0.30 vs ~0)")
    print(f"  distinct structures per 1,000 questions {structures_per_1000(run):.0f} vs tree-only "
          f"{structures_per_1000(tree['run']):.0f} (ratio "
          f"{structures_per_1000(run) / max(1.0, structures_per_1000(tree['run'])):.2f})")
    print(f"  distinct unlabelled shapes per 1,000 questions {1000 * rstats['distinct_shapes'] / max(1, len(run.records)):.0f} "
          f"vs tree-only {1000 * tstats['distinct_shapes'] / max(1, len(tree['run'].records)):.0f}")
    print(f"  uncertainty kinds {rstats['uncertainty']}; all nine: {kinds == set(UNCERTAINTY_KINDS)}")
    print(f"  independent re-verification {reverified:.3f} (target >= 0.95) in {t_rev:.1f} s")
    print(f"  tree-only speed {tree['q_per_s']:.1f} q/s; ratio full/tree {main_run['q_per_s'] / tree['q_per_s']:.2f}")

    if not args.skip_scaling:
        twowiki = load_pages([SHARED / "2wiki-corpus-6119.json"])
        extra = load_pages([SHARED / "qa" / "hotpotqa-train-100-corpus.json", SHARED / "qa" / "musique-train-100-corpus.json"])
        sizes = {"1k": pages[:1000], "5k": pages[:5000], "6.5k": pages,
                 "15k": renumber(pages + twowiki + extra), "2wiki": renumber(twowiki)}
        scaling = {}
        for name, subset in sizes.items():
            r = graph_and_run(subset, 300, args.seed)
            st = run_stats(r["kg"], r["run"])
            scaling[name] = {"pages": r["pages"], "graph_s": r["graph_s"], "densify_s": r["densify_s"],
                             "generate_s": r["generate_s"], "q_per_s": r["q_per_s"],
                             "edges": r["kg"].n_edges(), "acceptance": st["acceptance_rate"],
                             "cyclic_share": st["cyclic_share"], "questions": st["questions"]}
            print(f"  {name:>5}: {r['pages']:>6} pages, {r['kg'].n_edges():>7} edges, graph {r['graph_s']:.1f} s, "
                  f"densify {r['densify_s']:.1f} s, {r['q_per_s']:.1f} q/s, acceptance {st['acceptance_rate']:.2f}, "
                  f"cyclic {st['cyclic_share']:.2f}")
        out["scaling"] = scaling
        _plot_scaling(scaling)

    if not args.skip_solvability:
        out["solvability_sample"] = _solvability(args.seed)
    (RESULTS / "synth.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RESULTS / 'synth.json'}")


def _plot_scaling(scaling: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [v for k, v in scaling.items() if k != "2wiki"]
    fig, ax = plt.subplots(figsize=(5, 4))
    xs = [r["pages"] for r in rows]
    for key in ("graph_s", "densify_s", "generate_s"):
        ax.plot(xs, [r[key] for r in rows], "o-", label=key.replace("_s", " (s), 300 q" if key == "generate_s" else " (s)"))
    ax.set_xlabel("pages")
    ax.set_ylabel("seconds")
    ax.legend()
    ax.set_title("synthesis time vs graph size")
    fig.tight_layout()
    fig.savefig(RESULTS / "synth-scaling.png", dpi=100)
    plt.close(fig)


def _solvability(seed: int) -> dict[str, Any]:
    from wikisim.backends.wiki import WikiBackend
    from wikisim.index import open_index
    from wikisim.index.build import ensure_sample_index
    from wikisim.synth.solvability import solve_rates
    from wikisim.synth.source import graph_from_store

    index = open_index(ensure_sample_index())
    kg = graph_from_store(index.store).kg
    backend = WikiBackend(index)
    out = {}
    for name, tree_only in (("full", False), ("tree_only", True)):
        run = generate(kg, SynthConfig(n=100, seed=seed, sample=SampleConfig(tree_only=tree_only)),
                       index.manifest_hash, progress=False)
        rates = solve_rates(backend, run.records)
        out[name] = {"questions": rates.questions, "oracle": rates.oracle, "search_top1": rates.search_top1,
                     "oracle_failures": rates.oracle_failures,
                     "cyclic_share": run_stats(kg, run)["cyclic_share"]}
        print(f"  sample, {name}: oracle through visit {rates.oracle:.2f}, search-the-question top hit "
              f"{rates.search_top1:.2f} ({rates.questions} questions)")
    return out


if __name__ == "__main__":
    main()
