"""`wikisim build INPUT... --out DIR`: page store, passages and search indexes from dumps."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from wikisim.flags import add_config_arguments, config_from_args, option
from wikisim.index.build import DenseKind, EngineName
from wikisim.index.sparse_lucene import LUCENE_BUFFER_MB


@dataclass(frozen=True)
class BuildOptions:
    """What `wikisim build` is asked for (every field a flag and a YAML key)."""

    inputs: tuple[str, ...] = option(
        (),
        "dump files: MediaWiki XML (.xml/.bz2), WikiExtractor output, JSONL passages",
        positional=True,
        required=True,
    )
    out: str = option("", "index directory to create (or replace)", required=True)
    workers: int = option(
        1, "parser processes and Lucene indexing threads (output is the same for any N)"
    )
    dense: bool = option(True, "dense vectors (and so hybrid); --no-dense skips them")
    lucene: bool = option(True, "the Lucene index (needs a JVM); --no-lucene skips it")
    bm25s: bool | None = option(
        None,
        "the bm25s index; unset: built up to 500k passages (BM25S_MAX_PASSAGES), skipped past "
        "it when Lucene is built, since the hybrid fuses Lucene there; --bm25s builds it "
        "anyway, --no-bm25s never",
    )
    lucene_buffer_mb: int = option(
        LUCENE_BUFFER_MB,
        "Lucene's indexing buffer in MB (JVM heap held while indexing); any value gives "
        "the same index",
    )
    passage_words: int = option(150, "word budget of a passage")
    dense_index: DenseKind = option(
        "auto",
        "faiss index type; auto = exact up to 200k passages, IVF with 8-bit scalar "
        "quantisation beyond (recall@10 vs exact in the manifest)",
    )
    model_path: str | None = option(
        None, "local sentence-transformers model directory (None: packaged all-MiniLM-L6-v2)"
    )
    engine: EngineName = option(
        "local", "ray: parse and encode on a Ray cluster (pip install 'wikisim[ray]'); same output"
    )
    ray_address: str | None = option(
        None, "Ray cluster to join (ray://head:10001 or auto; None: a local one of --workers CPUs)"
    )
    quiet: bool = option(False, "no progress bars")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, BuildOptions)


def run(args: argparse.Namespace) -> int:
    from wikisim.index.build import build

    o = config_from_args(BuildOptions, args)
    report = build(
        o.inputs,
        o.out,
        workers=o.workers,
        dense=o.dense,
        lucene=o.lucene,
        bm25s=o.bm25s,
        lucene_buffer_mb=o.lucene_buffer_mb,
        passage_words=o.passage_words,
        model_path=o.model_path,
        progress=not o.quiet,
        dense_index=o.dense_index,
        engine=o.engine,
        ray_address=o.ray_address,
    )
    print(report.format())
    return 0
