"""Compact JSON compressed with zstd: how the stores keep each text once and small.

One frame per record (a page, a page's passages) so a lookup decompresses only what it
reads. Level 9 trades build time for size (pages of English prose shrink ~3.5x); reading
costs the same at every level.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import zstandard

from wikisim.errors import CorpusError

LEVEL = 9
_local = threading.local()
_DECODER = json.JSONDecoder()


def _codecs() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    """One compressor and decompressor per thread: zstandard's objects are not thread-safe."""
    codecs = getattr(_local, "codecs", None)
    if codecs is None:
        codecs = _local.codecs = (
            zstandard.ZstdCompressor(level=LEVEL),
            zstandard.ZstdDecompressor(),
        )
    return codecs


def pack(obj: Any) -> bytes:
    """`obj` as compact JSON (key order kept, non-ASCII as is), zstd-compressed."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return _codecs()[0].compress(text.encode("utf-8", "surrogatepass"))


def unpack(data: bytes) -> Any:
    return json.loads(_codecs()[1].decompress(data).decode("utf-8", "surrogatepass"))


def unpack_first(data: bytes) -> Any:
    """The first item of a packed list, the rest left undecoded: a page's text without its links
    (which, with their sentences, take longer to decode than the text itself)."""
    text = _codecs()[1].decompress(data).decode("utf-8", "surrogatepass")
    if not text.startswith("["):
        raise CorpusError(
            f"a stored record is not a list (it starts {text[:20]!r}): rebuild the store"
        )
    return _DECODER.raw_decode(text, 1)[0]
