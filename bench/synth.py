"""Benchmark of question synthesis over typed facts: quality figures and scale, on every dump we have.

    nice -n 10 .venv/bin/python bench/synth.py [--n 1000] [--seed 0] [--skip-100k] [--skip-solvability]

For each corpus (the bundled 2014 XML sample; the 6,514-article WikiExtractor set and its first
1,000 pages; 2WikiMultihopQA's 6,119 paragraphs; all of them with HotpotQA's and MuSiQue's
paragraphs, ~15k pages; 100k pages made by replicating that pool under new names with rewired
names, bench/replicate_text.py) a fresh process builds the SQLite fact table and generates N
questions on one core, and reports: build time, questions per second, peak resident memory,
the share of questions whose stated constraints are all typed facts, the share of answers of
a known kind, grammar artifacts, the share re-verified unique by the independent SQL verifier,
cyclic shares, uncertainty kinds. On the bundled sample's index: the oracle that follows the
evidence through env.step and the search-the-question baseline. Writes bench/results/synth.json,
synth-scale.png and every corpus's questions (synth-<corpus>.jsonl) there.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replicate_text import copy_name, replicated  # noqa: E402

from wikisim.corpus import read_pages  # noqa: E402
from wikisim.corpus.page import Page, Redirect  # noqa: E402
from wikisim.paths import SAMPLE_DUMP  # noqa: E402
from wikisim.synth.english import artifacts  # noqa: E402
from wikisim.synth.factdb import FactDB, ListSource, build_facts  # noqa: E402
from wikisim.synth.kinds import ANSWER_KINDS  # noqa: E402
from wikisim.synth.pipeline import SynthConfig, generate  # noqa: E402
from wikisim.synth.report import run_stats  # noqa: E402
from wikisim.synth.rewrite import anchor_names  # noqa: E402
from wikisim.synth.sample import LINK  # noqa: E402
from wikisim.synth.uncertainty import UNCERTAINTY_KINDS  # noqa: E402
from wikisim.synth.verify import Reverifier  # noqa: E402

SHARED = Path("/work/shared/data")
RESULTS = Path(__file__).resolve().parent / "results"
CORPORA = ("sample", "wikiextractor-1k", "wikiextractor-6.5k", "2wiki", "15k", "100k")


def renumber(pages: list[Page]) -> list[Page]:
    """Distinct ids and titles when corpora are combined (first title wins)."""
    seen: set[str] = set()
    out = []
    for p in pages:
        if p.title not in seen:
            seen.add(p.title)
            out.append(replace(p, id=len(out) + 1))
    return out


@dataclass(frozen=True)
class Replicas:
    """The 100k corpus as a stream (the pages are made as the build reads them, never held)."""

    pool: tuple[Page, ...]
    n: int

    def pages(self) -> Iterator[Page]:
        return replicated(self.pool, self.n)

    def redirects(self) -> Iterator[Redirect]:
        return iter(())

    def titles(self) -> Iterator[tuple[int, str]]:
        return (
            (i + 1, copy_name(self.pool[i % len(self.pool)].title, i // len(self.pool)))
            for i in range(self.n)
        )


def load(name: str, we_dir: Path) -> ListSource | Replicas:
    def pages_of(paths: list[Path]) -> list[Page]:
        return [p for p in read_pages(paths) if isinstance(p, Page)]

    if name == "sample":
        items = list(read_pages([SAMPLE_DUMP]))
        return ListSource(
            tuple(p for p in items if isinstance(p, Page)),
            tuple(r for r in items if isinstance(r, Redirect)),
        )
    we = pages_of(sorted(p for p in we_dir.rglob("*") if p.is_file()))
    if name == "wikiextractor-1k":
        return ListSource(tuple(we[:1000]))
    if name == "wikiextractor-6.5k":
        return ListSource(tuple(we))
    twowiki = pages_of([SHARED / "2wiki-corpus-6119.json"])
    if name == "2wiki":
        return ListSource(tuple(renumber(twowiki)))
    extra = pages_of(
        [
            SHARED / "qa" / "hotpotqa-train-100-corpus.json",
            SHARED / "qa" / "musique-train-100-corpus.json",
        ]
    )
    pool = renumber(we + twowiki + extra)
    if name == "15k":
        return ListSource(tuple(pool))
    return Replicas(tuple(pool), 100_000)


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stated_relations(c: Any) -> list[str]:
    if isinstance(c, dict):
        return ([c["relation"]] if c.get("type") == "Step" else []) + [
            r for v in c.values() for r in stated_relations(v)
        ]
    if isinstance(c, list):
        return [r for v in c for r in stated_relations(v)]
    return []


def build(name: str, we_dir: Path, path: Path) -> dict[str, Any]:
    """Read a corpus and build its fact table (in a fresh process)."""
    t0 = time.perf_counter()
    source = load(name, we_dir)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    db = build_facts(source, path)
    n_pages = len(source.page_list) if isinstance(source, ListSource) else source.n
    return {
        "pages": n_pages,
        "facts": db.counts(),
        "load_s": load_s,
        "build_s": time.perf_counter() - t0,
        "build_peak_rss_mb": peak_rss_mb(),
        "facts_mb": path.stat().st_size / 2**20,
    }


def synthesise(name: str, n: int, seed: int, path: Path) -> dict[str, Any]:
    """Questions from a built fact table (in a fresh process: its memory is the pipeline's own)."""
    db = FactDB(path)
    rss_open = peak_rss_mb()
    t0 = time.perf_counter()
    run = generate(db, SynthConfig(n=n, seed=seed), progress=False)
    gen_s = time.perf_counter() - t0
    rss_end = peak_rss_mb()
    records = run.records
    stats = run_stats(db, run)
    verifier = Reverifier(path)
    t0 = time.perf_counter()
    verified = sum(verifier.check(r).ok for r in records)
    verify_s = time.perf_counter() - t0
    flagged = [
        (r["question"], a)
        for r in records
        if (a := artifacts(r["question"], tuple(anchor_names(r["constraints"]))))
    ]
    typed = sum(LINK not in stated_relations(r["constraints"]) for r in records)
    known = sum(r["answer_kind"] in ANSWER_KINDS for r in records)
    with open(RESULTS / f"synth-{name}.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    q = max(1, len(records))
    return {
        "questions": len(records),
        "generate_s": gen_s,
        "q_per_s_one_core": len(records) / gen_s,
        "verify_s": verify_s,
        "rss_mb_opened": rss_open,
        "peak_rss_mb_generate": rss_end,
        "typed_only_share": typed / q,
        "known_kind_share": known / q,
        "artifacts": len(flagged),
        "artifact_examples": flagged[:5],
        "reverified_share": verified / q,
        "cyclic_share": stats["cyclic_share"],
        "typed_cyclic_share": stats["typed_cyclic_share"],
        "uncertainty": stats["uncertainty"],
        "all_nine_kinds": set(stats["uncertainty"]) == set(UNCERTAINTY_KINDS),
        "levels": stats["levels"],
        "answer_kinds": stats["answer_kinds"],
        "answers_with_page": stats["answers_with_page"],
        "fact_sources": stats["fact_sources"],
        "drops": stats["drops"],
        "acceptance": stats["acceptance_rate"],
    }


def _child(fn: Any, args: tuple, queue: mp.Queue) -> None:
    queue.put(fn(*args))


def in_fresh_process(fn: Any, *args: Any) -> dict[str, Any]:
    """fn(*args) in a new process, so each step's memory is its own."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def solvability(n: int, seed: int) -> dict[str, Any]:
    """Oracle and search baseline through env.step on the bundled sample's index."""
    from wikisim.backends.wiki import WikiBackend
    from wikisim.index import open_index
    from wikisim.index.build import ensure_bundled_index
    from wikisim.synth.solvability import search_gives_away, solve_rates
    from wikisim.synth.source import facts_from_store

    path = ensure_bundled_index()
    index = open_index(path)
    with tempfile.TemporaryDirectory() as tmp:
        db = facts_from_store(index.store, Path(tmp) / "facts.sqlite").db
        out = {}
        for label, giveaway in (
            (
                "giveaways_dropped",
                search_gives_away(WikiBackend(index, retriever=index.default_retriever)),
            ),
            ("all", None),
        ):
            run = generate(
                db,
                SynthConfig(n=n, seed=seed),
                index.manifest_hash,
                progress=False,
                giveaway=giveaway,
            )
            rates = solve_rates(path, run.records)
            out[label] = {
                "questions": rates.questions,
                "oracle": rates.oracle,
                "search_top1": rates.search_top1,
                "oracle_failures": rates.oracle_failures,
            }
            print(
                f"  sample ({label}): oracle through env.step {rates.oracle:.3f}, search-the-question top hit "
                f"{rates.search_top1:.3f} ({rates.questions} questions)",
                flush=True,
            )
    return out


def plot(results: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(((r["pages"], name, r) for name, r in results.items()), key=lambda t: t[0])
    xs = [p for p, _, _ in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    axes[0].plot(xs, [r["q_per_s_one_core"] for *_, r in rows], "o-")
    axes[0].set_ylabel("verified questions / s, one core")
    axes[1].plot(
        xs, [r["peak_rss_mb_generate"] for *_, r in rows], "o-", label="peak RSS, generating"
    )
    axes[1].plot(
        xs,
        [r["build_peak_rss_mb"] for *_, r in rows],
        "x--",
        label="peak RSS, building (pages held by the bench)",
    )
    axes[1].set_ylabel("MB")
    axes[1].legend()
    axes[2].plot(xs, [r["build_s"] for *_, r in rows], "o-")
    axes[2].set_ylabel("fact table build (s)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("pages")
        for p, name, _ in rows:
            ax.annotate(name, (p, ax.get_lines()[0].get_ydata()[xs.index(p)]), fontsize=7)
    fig.suptitle("synthesis over typed facts: throughput, memory and build time vs corpus size")
    fig.tight_layout()
    fig.savefig(RESULTS / "synth-scale.png", dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=1000, help="questions per corpus (the sample and 1k pages: 300)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpora", nargs="*", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--skip-solvability", action="store_true")
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous = RESULTS / "synth.json"  # a run over some corpora keeps the others' figures
    out: dict[str, Any] = json.loads(previous.read_text()) if previous.exists() else {"corpora": {}}
    out |= {"n": args.n, "seed": args.seed}
    with tempfile.TemporaryDirectory() as tmp:
        we_dir = Path(tmp) / "we"
        with tarfile.open(SHARED / "enwiki-2015-wikiextractor-6514.tar.xz") as tar:
            tar.extractall(we_dir, filter="data")
        for name in args.corpora:
            n = 300 if name in ("sample", "wikiextractor-1k") else args.n
            path = Path(tmp) / f"{name}.sqlite"
            r = in_fresh_process(build, name, we_dir, path)
            r |= in_fresh_process(synthesise, name, n, args.seed, path)
            path.unlink()
            out["corpora"][name] = r
            print(
                f"{name:>18}: {r['pages']:>7} pages, {r['facts']['relations']:>7} relations, "
                f"{r['facts']['attributes']:>6} attributes; build {r['build_s']:.1f} s; {r['questions']} q in "
                f"{r['generate_s']:.1f} s = {r['q_per_s_one_core']:.0f} q/s; peak RSS: build {r['build_peak_rss_mb']:.0f} "
                f"MB, generate {r['peak_rss_mb_generate']:.0f} MB; typed-only {r['typed_only_share']:.3f}, "
                f"known kind {r['known_kind_share']:.3f}, artifacts {r['artifacts']}, reverified "
                f"{r['reverified_share']:.3f}, cyclic {r['cyclic_share']:.2f} (typed {r['typed_cyclic_share']:.2f}), "
                f"kinds {len(r['uncertainty'])}/9",
                flush=True,
            )
            (RESULTS / "synth.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    if not args.skip_solvability:
        out["solvability_sample"] = solvability(300, args.seed)
    plot(out["corpora"])
    (RESULTS / "synth.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RESULTS / 'synth.json'} and {RESULTS / 'synth-scale.png'}")


if __name__ == "__main__":
    main()
