"""Dense vectors shipped with the package for a bundled corpus, read instead of encoded.

Encoding the bundled sample's 4,635 passages takes ~2.5 min on 2 CPU cores, which a fresh
machine's first `gym.make("WikiSim-v0")` (the hybrid retriever) would otherwise pay. A file
in `data/vectors/` is used only when the passages' texts, the encoder's files and the
parameters that fix a vector's bits are the ones it was made from; any other build encodes
as usual. Every machine then builds the bundled sample's dense index to the same bytes.

    python -m wikisim.index.bundled_vectors INDEX_DIR NAME   # ship a flat index's vectors
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import zstandard

from wikisim.index.passages import PassageStore
from wikisim.paths import DATA_DIR

VECTORS_DIR = DATA_DIR / "vectors"
#: What a vector's bits depend on beyond the texts; a shipped file must match all of them.
ENCODING_KEYS = ("model_sha256", "max_seq_tokens", "encode_chunk")


def texts_sha256(texts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _load(path: Path) -> np.ndarray:
    raw = zstandard.ZstdDecompressor().decompress(path.read_bytes())
    return np.load(io.BytesIO(raw), allow_pickle=False)


def find(store: PassageStore, encoding: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]] | None:
    """The shipped vectors of exactly these passages under this encoding, with their record, or None."""
    n, texts_hash = len(store), None
    for record_path in sorted(VECTORS_DIR.glob("*.json")):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["rows"] != n or any(record[k] != encoding[k] for k in ENCODING_KEYS):
            continue
        texts_hash = texts_hash or texts_sha256(p.contents for p in store)
        if record["texts_sha256"] != texts_hash:
            continue
        vectors = _load(record_path.with_suffix(".npy.zst"))
        if hashlib.sha256(vectors.tobytes()).hexdigest() != record["vectors_sha256"]:
            raise ValueError(
                f"{record_path.with_suffix('.npy.zst')} does not hold the vectors its record names"
            )
        return vectors, record
    return None


def chunk_encoder(
    vectors: np.ndarray, start: int
) -> Callable[[Iterator[list[str]]], Iterator[np.ndarray]]:
    """An encoder for `build_dense` that hands out rows `start`.. of `vectors`, chunk by chunk."""

    def encode(chunks: Iterator[list[str]]) -> Iterator[np.ndarray]:
        row = start
        for texts in chunks:
            yield np.ascontiguousarray(vectors[row : row + len(texts)])
            row += len(texts)

    return encode


def write(index_dir: Path, name: str) -> Path:
    """Ship the vectors of a built index's flat dense index as `data/vectors/NAME.npy.zst` + `.json`."""
    import faiss

    from wikisim.index.dense import INDEX_FILE
    from wikisim.index.layout import PASSAGES
    from wikisim.index.manifest import read_manifest

    manifest = read_manifest(index_dir)
    dense = manifest["indexes"]["dense"]
    if dense["kind"] != "flat":
        raise ValueError(
            f"{index_dir}: only a flat index holds its vectors exactly (kind {dense['kind']!r})"
        )
    index = faiss.read_index(str(index_dir / "dense" / INDEX_FILE))
    vectors = index.reconstruct_n(0, index.ntotal).astype(np.float32)
    store = PassageStore(index_dir / PASSAGES)
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    VECTORS_DIR.mkdir(parents=True, exist_ok=True)
    out = VECTORS_DIR / f"{name}.npy.zst"
    out.write_bytes(zstandard.ZstdCompressor(level=19).compress(buffer.getvalue()))
    record = {
        "rows": int(vectors.shape[0]),
        "dim": int(vectors.shape[1]),
        "texts_sha256": texts_sha256(p.contents for p in store),
        "vectors_sha256": hashlib.sha256(vectors.tobytes()).hexdigest(),
        "model_sha256": manifest["versions"]["embedding_model"]["sha256"],
        "max_seq_tokens": dense["max_seq_tokens"],
        "encode_chunk": dense["encode_chunk"],
        "encode_batch": dense["encode_batch"],
        "encode_device": dense["encode_device"],
    }
    (VECTORS_DIR / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="a built index whose dense index is flat")
    parser.add_argument("name", help="file name under data/vectors/")
    args = parser.parse_args()
    print(write(args.index, args.name))


if __name__ == "__main__":
    main()
