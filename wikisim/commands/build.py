"""`wikisim build INPUT... --out DIR`: page store, passages and search indexes from dumps."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        metavar="INPUT",
        help="dump files: MediaWiki XML (.xml/.bz2), WikiExtractor output, JSONL passages",
    )
    parser.add_argument(
        "--out", required=True, type=Path, help="index directory to create (or replace)"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="parser processes (output is the same for any N)"
    )
    parser.add_argument(
        "--no-dense", dest="dense", action="store_false", help="skip dense vectors (and hybrid)"
    )
    parser.add_argument(
        "--no-lucene", dest="lucene", action="store_false", help="skip the Lucene index (no JVM)"
    )
    parser.add_argument(
        "--passage-words", type=int, default=150, help="word budget of a passage (default 150)"
    )
    parser.add_argument(
        "--dense-index",
        choices=("auto", "flat", "ivf", "ivfsq", "ivfpq", "hnsw"),
        default="auto",
        help="faiss index type; auto = exact up to 200k passages, "
        "IVF with 8-bit scalar quantisation beyond (recall@10 vs exact in the manifest)",
    )
    parser.add_argument(
        "--model-path",
        type=Path,
        default=None,
        help="local sentence-transformers model directory (default: packaged all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: parse and encode on a Ray cluster (pip install 'wikisim[ray]'); same output",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster to join (e.g. ray://head:10001 or auto); default: a local one of --workers CPUs",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from wikisim.index.build import build

    report = build(
        args.inputs,
        args.out,
        workers=args.workers,
        dense=args.dense,
        lucene=args.lucene,
        passage_words=args.passage_words,
        model_path=args.model_path,
        progress=not args.quiet,
        dense_index=args.dense_index,
        engine=args.engine,
        ray_address=args.ray_address,
    )
    print(report.format())
    return 0
