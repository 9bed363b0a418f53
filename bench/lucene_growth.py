"""Does Lucene's query time grow differently over distinct real text than over replicated copies?

bench/scale.py makes its large corpora by copying the 106 articles of the 2014 sample, so at
200k pages every passage has ~1,900 exact twins. Its Lucene k=10 search grew 16x from 10k to
200k pages (bench/results/scale/lucene-search-200k.json). Whether that is Lucene's growth on a
real Wikipedia or the copies' (posting lists that grow without new vocabulary, a top score
shared by thousands of twins, which block-max pruning cannot skip) is what this measures, over
the largest body of distinct real text the repository can read (~157k passages: the 2014
sample, the 6,514 WikiExtractor articles, the 2WikiMultihopQA, HotpotQA and MuSiQue corpora):

    real        the first n pages of a seeded shuffle of that index's pages (nested subsets)
    replicated  the smallest real subset copied until it holds as many passages as each real
                subset (copy k: page ids shifted, titles "Title (k)", as bench/replicate.py)

Each corpus is indexed with the build's own Lucene indexer (one thread), and every question of
bench/scale.py's search sample is timed on every index, interleaved (bench/lucene_search.py's
`measure`: thread CPU ms, Lucene alone with block-max pruning, Lucene exhaustive, the env's
ranked search). Growth is each family's p50 at its largest size over its smallest, and its
log-log slope against passages.

    .venv/bin/wikisim build --out /tmp/real --no-dense --no-bm25s data/dumps/enwiki-2014-sample.xml.bz2 \
        WIKIEXTRACTOR_FILES... ../shared/data/2wiki-corpus-6119.json data/qa/*-corpus.json
    nice -n 10 .venv/bin/python bench/lucene_growth.py --index /tmp/real --out /tmp/lucene-growth

(OUT/lucene-growth.{json,png}, the indexes under OUT/work; the committed copies are in
bench/results/scale/.)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lucene_search import REPEATS, measure  # noqa: E402
from scale import QUERIES, exponent  # noqa: E402

from wikisim.index.jvm import pyserini_module  # noqa: E402
from wikisim.index.passages import Passage, PassageStore  # noqa: E402
from wikisim.index.sparse_lucene import build_lucene  # noqa: E402

PATHS = ("lucene_k10", "exhaustive_k10", "ranked_k10", "lucene_deep")


def _pages(store: PassageStore) -> dict[int, list[Passage]]:
    pages: dict[int, list[Passage]] = defaultdict(list)
    for p in store:
        pages[p.page_id].append(p)
    return dict(pages)


def _copies(base: list[list[Passage]], copies: int, shift: int) -> Iterator[Passage]:
    """Copy k of every base page: ids shifted by k * shift, title "Title (k)" (k >= 1)."""
    for k in range(copies):
        for page in base:
            for p in page:
                if k == 0:
                    yield p
                    continue
                page_id = p.page_id + k * shift
                yield replace(
                    p,
                    docid=f"{page_id}#{p.docid.partition('#')[2]}",
                    page_id=page_id,
                    title=f"{p.title} ({k})",
                )


def corpora(
    store: PassageStore, fractions: list[float], seed: int
) -> dict[str, tuple[int, Iterator[Passage]]]:
    """Label -> (passages, their stream) for both families; the smallest real subset is shared."""
    pages = _pages(store)
    order = sorted(pages)
    random.Random(seed).shuffle(order)
    subsets = [order[: max(1, round(f * len(order)))] for f in sorted(fractions)]
    base = [pages[i] for i in subsets[0]]
    base_n = sum(len(p) for p in base)
    shift = max(pages) + 1
    out: dict[str, tuple[int, Iterator[Passage]]] = {}
    for ids in subsets:
        chosen = [pages[i] for i in sorted(ids)]
        n = sum(len(p) for p in chosen)
        out[f"real-{n}"] = (n, (p for page in chosen for p in page))
        if ids is not subsets[0]:
            copies = max(1, round(n / base_n))
            out[f"replicated-{copies * base_n}"] = (copies * base_n, _copies(base, copies, shift))
    return out


def _growth(indexes: dict[str, Any], family: str, sizes: dict[str, int]) -> dict[str, Any]:
    smallest = min(sizes, key=lambda label: sizes[label])  # the shared real subset
    labels = sorted(
        {smallest, *(label for label in indexes if label.startswith(family))},
        key=lambda label: sizes[label],
    )
    xs = [sizes[label] for label in labels]
    out: dict[str, Any] = {"labels": labels, "passages": xs}
    for path in PATHS:
        ys = [indexes[label][f"{path}_p50_ms"] for label in labels]
        out[path] = {
            "p50_ms": ys,
            "ratio": ys[-1] / ys[0],
            "exponent": exponent(xs, ys),
        }
    out["passages_ratio"] = xs[-1] / xs[0]
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (path_key, label) in enumerate(
        (("lucene_k10", "Lucene k=10 (pruned)"), ("exhaustive_k10", "Lucene k=10 exhaustive"))
    ):
        for family, style in (("real", "o-"), ("replicated", "s--")):
            g = result["growth"][family]
            ax.plot(
                g["passages"],
                g[path_key]["p50_ms"],
                style,
                color=f"C{i}",
                label=f"{label}, {family} (slope {g[path_key]['exponent']:.2f})",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="passages",
        ylabel="p50 thread CPU ms",
        title="Lucene search over distinct real text vs replicated copies",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="a built index of real text")
    parser.add_argument("--out", type=Path, required=True, help="directory for results and indexes")
    parser.add_argument("--fractions", default="0.1,0.316,1.0", help="real subsets, of its pages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warm-passes", type=int, default=3)
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    store = PassageStore(args.index / "passages.sqlite")
    work = args.out / "work"
    sizes: dict[str, int] = {}
    indexes: dict[str, Path] = {}
    for label, (n, stream) in corpora(store, fractions, args.seed).items():
        sizes[label], indexes[label] = n, work / label
        if not (work / label / "done").is_file():
            build_lucene(stream, work / label)
            (work / label / "done").write_text("")
        print(f"{label}: {n} passages", flush=True)
    pyserini_module("search.lucene")
    measured = measure(indexes, None, args.warm_passes)
    other = measured.pop("other_threads_cpu_ms_per_call")
    result: dict[str, Any] = {
        "queries": QUERIES,
        "repeats": REPEATS,
        "warm_passes": args.warm_passes,
        "other_threads_cpu_ms_per_call": other,
        "indexes": measured,
        "growth": {f: _growth(measured, f, sizes) for f in ("real", "replicated")},
    }
    for family in ("real", "replicated"):
        g = result["growth"][family]
        print(
            f"{family}: {g['passages'][0]} -> {g['passages'][-1]} passages "
            f"({g['passages_ratio']:.1f}x): "
            + ", ".join(f"{p} {g[p]['ratio']:.2f}x (slope {g[p]['exponent']:.2f})" for p in PATHS)
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lucene-growth.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.out / "lucene-growth.png")
    print(f"wrote {args.out / 'lucene-growth.json'} and .png")


if __name__ == "__main__":
    main()
