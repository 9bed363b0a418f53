"""A built index directory and the retrievers over it.

Layout: manifest.json (written last), pages.sqlite, passages.sqlite, bm25s/, lucene/, dense/.
A directory holding only a Lucene index (a pyserini prebuilt index such as
`wikipedia-kilt-doc`) opens too, with the "lucene" retriever alone.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index.base import DEFAULT_RETRIEVER, RETRIEVERS, Retriever, RetrieverName
from wikisim.index.manifest import FORMAT, MANIFEST, manifest_hash, read_manifest, sha256_file
from wikisim.index.passages import PassageStore
from wikisim.index.ranked import RankedRetriever

if TYPE_CHECKING:
    from wikisim.corpus import PageStore

PAGES, PASSAGES = "pages.sqlite", "passages.sqlite"
#: Past this many passages the hybrid's sparse side is Lucene, not bm25s (when both are built).
#: bm25s scores every passage sharing a term with the query, so its cost grows with the corpus;
#: Lucene's barely does. Thread CPU ms a query at p50, ranking 100 deep as the hybrid does
#: (bench/scale.py on replicated enwiki pages, 22k / 219k / 437k / 874k passages): bm25s
#: 0.9 / 4.8 / 6.7 / 10.7 (exponent 0.69), Lucene 5.2 / 6.2 / 7.7 / 9.4 (0.16). They cross near
#: 600k passages (10 deep, near 300k); 500k is about 110k average enwiki articles. Lucene has
#: no title field, so past the limit the hybrid ranks without the title re-scoring.
#: Past it `wikisim build` also leaves bm25s out unless told --bm25s (`build.bm25s_skipped`).
BM25S_MAX_PASSAGES = 500_000


def building_dir(out: Path) -> Path:
    """Where a build of `out` is written before the rename that makes it visible."""
    return out.parent / f".{out.name}.building"


def _fix(path: Path) -> str:
    return f"build it with `wikisim build INPUT... --out {path}`"


def is_lucene_dir(path: Path) -> bool:
    return path.is_dir() and any(path.glob("segments_*"))


class Index:
    """An opened index directory: its manifest, page store, passages and retrievers."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        self.manifest_hash = manifest_hash(manifest)
        self._retrievers: dict[str, Retriever] = {}

    def close(self) -> None:
        """Close the stores this index opened (retrievers hold memory maps the process releases)."""
        for name in ("store", "passages"):
            opened = self.__dict__.pop(name, None)
            if opened is not None:
                opened.close()

    @property
    def prebuilt(self) -> bool:
        return self.manifest.get("kind") == "lucene-prebuilt"

    @cached_property
    def store(self) -> PageStore:
        from wikisim.corpus import PageStore

        if self.prebuilt:
            raise IndexNotBuiltError(
                f"{self.path} is a bare Lucene index: it has no page store; {_fix(self.path)}"
            )
        return PageStore(self.path / PAGES)

    @cached_property
    def passages(self) -> PassageStore | None:
        return None if self.prebuilt else PassageStore(self.path / PASSAGES)

    def require_passages(self) -> PassageStore:
        """The passage store, or why this index has none (a bare Lucene index)."""
        if self.passages is None:
            raise IndexNotBuiltError(
                f"{self.path} is a bare Lucene index: it has no passage store; {_fix(self.path)}"
            )
        return self.passages

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrievers this directory can serve, by name ("lucene-rm3": a Lucene index
        built with document vectors, which RM3 reads; every build since they were added)."""
        indexes = self.manifest.get("indexes", {})
        built = set(indexes)
        if {"dense"} <= built and built & {"bm25s", "lucene"}:
            built.add("hybrid")
        if indexes.get("lucene", {}).get("docvectors"):
            built.add("lucene-rm3")
        return tuple(b for b in RETRIEVERS if b in built)

    @property
    def default_retriever(self) -> RetrieverName:
        """DEFAULT_RETRIEVER where this index has it, else bm25s, Lucene or dense (an index built
        without some of them, or a bare Lucene index): what a command uses when told no retriever."""
        built = self.retrievers
        for name in (DEFAULT_RETRIEVER, "bm25s", "lucene", "dense"):
            if name in built:
                return name
        raise IndexNotBuiltError(
            f"{self.path} has no retriever a search can use; {_fix(self.path)}"
        )

    @property
    def sparse(self) -> str:
        """The sparse retriever the hybrid fuses: bm25s up to BM25S_MAX_PASSAGES passages, else Lucene."""
        built = [name for name in ("bm25s", "lucene") if name in self.retrievers]
        if len(built) == 2 and len(self.require_passages()) > BM25S_MAX_PASSAGES:
            return "lucene"
        return built[0]

    def retriever(self, name: str = "bm25s") -> Retriever:
        """The retriever called `name`, made once per Index (each loads its files lazily)."""
        if name not in RETRIEVERS:
            raise ConfigError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
        if name not in self.retrievers:
            how = {  # bm25s: left out by --no-bm25s, or by default past BM25S_MAX_PASSAGES
                "bm25s": "with --bm25s",
                "dense": "without --no-dense",
                "hybrid": "without --no-dense",
                "lucene-rm3": "without --no-lucene",
            }.get(name, f"without --no-{name}")
            raise IndexNotBuiltError(
                f"{self.path} has no {name!r} index (it has: {', '.join(self.retrievers) or 'none'}); "
                f"rebuild it {how}: `wikisim build INPUT... --out {self.path}`"
            )
        if name not in self._retrievers:
            self._retrievers[name] = self._make(name)
        return self._retrievers[name]

    def _make(self, name: str) -> Retriever:
        if name == "bm25s":
            from wikisim.index.sparse_bm25s import BM25sRetriever

            return BM25sRetriever(self.path / "bm25s", self.require_passages(), self.manifest_hash)
        if name == "lucene":
            from wikisim.index.sparse_lucene import LuceneRetriever

            lucene_dir = self.path if self.prebuilt else self.path / "lucene"
            return LuceneRetriever(lucene_dir, self.passages, self.manifest_hash)
        if name == "lucene-rm3":
            from wikisim.index.sparse_lucene import LuceneRetriever

            return LuceneRetriever(
                self.path / "lucene", self.passages, self.manifest_hash, rm3=True
            )
        if name == "dense":
            from wikisim.index.dense import DenseRetriever

            return DenseRetriever(
                self.path / "dense", self.require_passages(), self.manifest, self.manifest_hash
            )
        from wikisim.index.hybrid import HybridRetriever

        sparse_r, dense_r = (
            cast(RankedRetriever, self.retriever(part)) for part in (self.sparse, "dense")
        )
        return HybridRetriever(sparse_r, dense_r, self.manifest_hash)


def _prebuilt_manifest(path: Path) -> dict[str, Any]:
    """A content id for a Lucene index we did not build: its small files hashed, sizes of the rest."""
    files = {}
    for f in sorted(p for p in path.iterdir() if p.is_file()):
        files[f.name] = (
            sha256_file(f) if f.stat().st_size < (1 << 20) else f"{f.stat().st_size} bytes"
        )
    return {"kind": "lucene-prebuilt", "indexes": {"lucene": {"files": files}}}


def prebuilt_path(name: str) -> Path | None:
    """Where pyserini keeps its prebuilt index `name` (e.g. "wikipedia-kilt-doc"); None if no such name.

    The directory pyserini's own download makes ($PYSERINI_CACHE or ~/.cache/pyserini, then
    indexes/<file name>.<md5>), so an index fetched once with pyserini is found by name.
    """
    import re

    from wikisim.index.jvm import pyserini_module

    info = pyserini_module("prebuilt_index_info").TF_INDEX_INFO.get(name)
    if info is None:
        return None
    base = re.sub(r"\.tar\.gz.*$", "", info["filename"])
    return Path(pyserini_module("util").get_cache_home()) / "indexes" / f"{base}.{info['md5']}"


def _by_name(path: Path) -> Path:
    """A pyserini prebuilt index name resolved to its local directory, else `path` as given."""
    if path.exists() or len(path.parts) != 1:
        return path
    local = prebuilt_path(path.name)
    if local is None:
        return path
    if not is_lucene_dir(local):
        raise IndexNotBuiltError(
            f"pyserini prebuilt index {path.name!r} is not downloaded (looked in {local}); fetch it where "
            f'there is network with `python -c "from pyserini.search.lucene import LuceneSearcher; '
            f"LuceneSearcher.from_prebuilt_index('{path.name}')\"` and copy that directory here "
            "(or point PYSERINI_CACHE at a copy)"
        )
    return local


def open_index(path: str | Path) -> Index:
    """Open a built index directory, a bare pyserini/Lucene index directory, or a pyserini
    prebuilt index by name (`wikipedia-dpr-100w`, `wikipedia-kilt-doc`: searched with its
    stored documents; no page store, so visit has no pages behind it).

    Raises:
        IndexNotBuiltError: the directory is missing, half-built, or not an index.
    """
    path = _by_name(Path(path))
    if not path.is_dir():
        pending = building_dir(path)
        if pending.exists():
            raise IndexNotBuiltError(
                f"index {path} is not built: a build was interrupted (its work is in {pending}); "
                f"run the same `wikisim build INPUT... --out {path}` again to finish it"
            )
        raise IndexNotBuiltError(f"no index at {path}; {_fix(path)}")
    if (path / MANIFEST).is_file():
        manifest = read_manifest(path)
        if manifest.get("format") != FORMAT:
            raise IndexNotBuiltError(
                f"index {path} is in format {manifest.get('format')!r}; this wikisim reads "
                f"format {FORMAT}: rebuild it, {_fix(path)}"
            )
        missing = [n for n in (PAGES, PASSAGES) if not (path / n).is_file()]
        missing += [n + "/" for n in manifest.get("indexes", {}) if not (path / n).is_dir()]
        if missing:
            raise IndexNotBuiltError(
                f"index {path} is damaged: missing {', '.join(missing)}; {_fix(path)}"
            )
        return Index(path, manifest)
    if is_lucene_dir(path):
        return Index(path, _prebuilt_manifest(path))
    present = sorted(p.name for p in path.iterdir())
    raise IndexNotBuiltError(
        f"{path} is not a finished index: it has no {MANIFEST} "
        f"(found: {', '.join(present) or 'nothing'}); {_fix(path)}"
    )
