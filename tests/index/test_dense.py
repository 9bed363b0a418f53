"""Dense retrieval with each faiss index type, on a few real passages (packaged MiniLM)."""

from __future__ import annotations

import json
from itertools import islice

import numpy as np
import pytest

from wikisim.corpus.page import Page
from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index.dense import DenseRetriever, build_dense, model_record, read_faiss
from wikisim.index.passages import PassageStore, PassageStoreWriter, split_page
from wikisim.paths import QA_DIR


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> PassageStore:
    corpus = json.loads((QA_DIR / "hotpotqa-train-100-corpus.json").read_text(encoding="utf-8"))
    pages = [
        Page(id=i + 1, title=t, text="".join(s))
        for i, (t, s) in enumerate(sorted(corpus.items())[:80])
    ]
    path = tmp_path_factory.mktemp("dense") / "passages.sqlite"
    writer = PassageStoreWriter(path)
    for page in pages:
        writer.add(split_page(page, 150))
    writer.close()
    return PassageStore(path)


@pytest.mark.parametrize("kind", ["flat", "ivf", "ivfsq", "hnsw"])
def test_each_faiss_kind_finds_a_passage_by_its_own_words(store, tmp_path, kind: str) -> None:
    info = build_dense(store, tmp_path, kind=kind, progress=False)
    assert info["kind"] == kind and info["docs"] == len(store) and info["dim"] == 384
    assert read_faiss(tmp_path / "index.faiss").ntotal == len(store)
    manifest = {"indexes": {"dense": info}, "versions": {"embedding_model": model_record(None)}}
    retriever = DenseRetriever(tmp_path, store, manifest, "abc")
    targets = [p for p in store][:: max(1, len(store) // 5)][:5]
    results = retriever.search([p.text for p in targets], k=3)
    assert [hits[0].docid for hits in results] == [p.docid for p in targets]
    assert retriever.search([targets[0].text], k=3) == results[:1]


def test_model_is_a_local_directory_and_must_match_the_build(store, tmp_path) -> None:
    with pytest.raises(ConfigError, match="never a hub name"):
        build_dense(
            store, tmp_path, model_path="sentence-transformers/all-MiniLM-L6-v2", progress=False
        )
    info = {"kind": "flat"}
    wrong = {"indexes": {"dense": info}, "versions": {"embedding_model": {"sha256": "0" * 64}}}
    (tmp_path / "index.faiss").write_bytes(b"")
    (tmp_path / "model.json").write_text(json.dumps({"path": None}))
    with pytest.raises(IndexNotBuiltError, match="not the one"):
        DenseRetriever(tmp_path, store, wrong)
    with pytest.raises(IndexNotBuiltError, match="no dense index"):
        DenseRetriever(tmp_path / "nowhere", store, wrong)


def test_chunked_encoding_keeps_row_order(store, tmp_path, monkeypatch) -> None:
    from wikisim.index import dense

    monkeypatch.setattr(dense, "ENCODE_CHUNK", 7)
    info = build_dense(store, tmp_path, kind="flat", progress=False)
    assert info["encode_chunk"] == 7 and info["docs"] == len(store)
    built = read_faiss(tmp_path / "index.faiss").reconstruct_n(0, len(store))
    model = dense.load_encoder(str(dense.resolve_model_path(None)))
    whole = model.encode(
        [p.contents for p in store], batch_size=dense.ENCODE_BATCH, normalize_embeddings=True
    )
    assert np.allclose(
        built, whole, atol=1e-4
    )  # padding shifts low bits only; every row in its place


def test_compressed_index_reports_recall_against_exact_search(store, tmp_path) -> None:
    info = build_dense(store, tmp_path, kind="ivfsq", progress=False)
    assert info["recall_at_10"] >= 0.95 and 1 <= info["nprobe"] <= info["nlist"]
    assert info["recall_queries"] == min(200, len(store) - 1)
    assert not (tmp_path / "shards").exists()  # the vectors are gone once the index holds them
    pq = build_dense(
        store, tmp_path, kind="ivfpq", progress=False
    )  # lossy codes: recall is reported, lower
    assert 0.3 < pq["recall_at_10"] <= 1 and pq["kind"] == "ivfpq" and "nprobe" in pq


def test_lists_stop_at_nlist_max_and_recall_holds(store, tmp_path, monkeypatch) -> None:
    """Past NLIST_MAX lists (a whole Wikipedia) the lists grow instead of their number, so
    adding a vector costs the same at any size; the width is tuned to the target as before."""
    from wikisim.index import dense

    free = build_dense(store, tmp_path / "free", kind="ivfsq", progress=False)
    monkeypatch.setattr(dense, "NLIST_MAX", free["nlist"] // 2)
    capped = build_dense(store, tmp_path / "capped", kind="ivfsq", progress=False)
    assert capped["nlist"] == free["nlist"] // 2 < free["nlist"]
    assert capped["recall_at_10"] >= 0.95


def test_a_killed_encode_resumes_at_its_first_missing_shard(tmp_path, monkeypatch) -> None:
    from wikisim.index import dense

    monkeypatch.setattr(dense, "SHARD_ROWS", 8)
    monkeypatch.setattr(dense, "ENCODE_CHUNK", 4)
    rng = np.random.default_rng(0)
    full = rng.normal(size=(20, 6)).astype(np.float32)
    asked: list[tuple[int, int]] = []
    kill = [True]

    def vectors(start: int, stop: int) -> np.ndarray:
        asked.append((start, stop))
        if start >= 12 and kill[0]:
            kill[0] = False
            raise RuntimeError("killed")  # inside the second shard
        return full[start:stop]

    with pytest.raises(RuntimeError, match="killed"):
        dense.write_shards(tmp_path, 20, 6, vectors)
    assert [p.name for p in sorted(tmp_path.iterdir())] == [
        "vectors-00000.npy",
        "vectors-00001.part",
    ]
    asked.clear()
    dense.write_shards(tmp_path, 20, 6, vectors)
    assert asked == [(8, 12), (12, 16), (16, 20)]  # the finished shard is not encoded again
    assert np.array_equal(np.concatenate(dense.read_shards(tmp_path)), full)


@pytest.mark.parametrize("kind", ["ivf", "ivfsq", "ivfpq"])
def test_ivf_builds_are_the_same_bytes_on_any_number_of_threads(tmp_path, kind: str) -> None:
    import faiss

    from wikisim.index.dense import build_from_shards, write_shards

    def vectors(start: int, stop: int) -> np.ndarray:
        v = np.random.default_rng(start).normal(size=(stop - start, 64)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    write_shards(tmp_path / "shards", 30_000, 64, vectors)
    before = faiss.omp_get_max_threads()
    records = []
    try:
        for threads in (1, 4):
            faiss.omp_set_num_threads(threads)
            (tmp_path / str(threads)).mkdir()
            records.append(build_from_shards(tmp_path / "shards", tmp_path / str(threads), kind))
    finally:
        faiss.omp_set_num_threads(before)
    assert records[0]["kind"] == kind and records[0]["nlist"] > 100
    assert records[0] == records[1]  # the sha256 of the index file, nprobe and recall included


def test_the_bundled_sample_reads_its_shipped_vectors_and_they_are_the_encoders(
    sample_index,
) -> None:
    """The shipped vectors are found for the sample's passages (else every fresh machine encodes
    them again, ~2.5 min), not for other texts or another encoder, and agree with an encode."""
    from wikisim.index import bundled_vectors
    from wikisim.index.dense import (
        ENCODE_BATCH,
        ENCODE_CHUNK,
        MAX_SEQ_TOKENS,
        _tree_hash,
        encode_chunk,
        load_encoder,
        resolve_model_path,
    )
    from wikisim.index.layout import PASSAGES

    sample = PassageStore(sample_index / PASSAGES)
    model = str(resolve_model_path(None))
    encoding = {
        "model_sha256": _tree_hash(model),
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "encode_chunk": ENCODE_CHUNK,
    }
    found = bundled_vectors.find(sample, encoding)
    assert found is not None
    vectors, record = found
    assert vectors.shape == (len(sample), 384) and record["encode_batch"] == ENCODE_BATCH
    assert bundled_vectors.find(sample, {**encoding, "model_sha256": "another model"}) is None
    assert bundled_vectors.find(sample, {**encoding, "max_seq_tokens": 256}) is None
    rows = [
        p.contents for p in islice(sample, ENCODE_BATCH)
    ]  # one batch: other padding, same vectors
    encoded = encode_chunk(load_encoder(model), rows, ENCODE_BATCH)
    assert np.abs(encoded - vectors[:ENCODE_BATCH]).max() < 1e-5
