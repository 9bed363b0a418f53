"""Build a page store, passages and search indexes from dumps, atomically and resumably.

Everything is written to a hidden sibling directory (`.<out>.building`) in stages; each
finished stage leaves a record in `.stages/`. A killed build is resumed from its last
finished stage when inputs, parameters and software are unchanged (restarted from
scratch otherwise), and the result is renamed to `out` only after manifest.json is
written, so `out` is either complete or absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from tqdm import tqdm

from wikisim.errors import ConfigError, CorpusError
from wikisim.index import layout
from wikisim.index.layout import PAGES, PASSAGES, building_dir, open_index
from wikisim.index.manifest import (
    FORMAT,
    MANIFEST,
    canonical,
    package_versions,
    read_manifest,
    sha256_file,
    sha256_tree,
    write_manifest,
)
from wikisim.index.passages import MIN_PASSAGE_WORDS, PassageStore, PassageStoreWriter, split_page
from wikisim.paths import QA_DIR, SAMPLE_DUMP, cache_dir, cache_lock

_T = TypeVar("_T")

DenseKind = Literal["auto", "flat", "ivf", "ivfsq", "ivfpq", "hnsw"]
EngineName = Literal["local", "ray"]
_DENSE_KINDS: tuple[str, ...] = get_args(DenseKind)


@dataclass(frozen=True)
class BuildParams:
    """What changes the built index (the worker count does not: output is identical)."""

    passage_words: int = 150
    dense: bool = True
    lucene: bool = True
    dense_index: DenseKind = "auto"
    model_path: str | None = None
    bm25s: bool | None = None  # None: built up to layout.BM25S_MAX_PASSAGES when Lucene is built

    def __post_init__(self) -> None:
        if self.bm25s is False and not self.lucene:
            raise ConfigError(
                "--no-bm25s with --no-lucene leaves no sparse index (search and the hybrid need "
                "one): keep bm25s or Lucene"
            )
        if not MIN_PASSAGE_WORDS <= self.passage_words <= 2000:
            raise ConfigError(
                f"passage_words must be in [{MIN_PASSAGE_WORDS}, 2000], got {self.passage_words}"
            )
        if self.dense_index not in _DENSE_KINDS:
            raise ConfigError(
                f"dense_index must be one of {_DENSE_KINDS}, got {self.dense_index!r}"
            )


@dataclass(frozen=True)
class BuildReport:
    out: Path
    manifest_hash: str
    counts: dict[str, int]
    skipped: dict[str, int]  # reason -> pages skipped for it
    seconds: float
    stage_seconds: dict[str, float] = field(default_factory=dict)
    resumed: tuple[str, ...] = ()  # stages taken from an interrupted build
    not_built: dict[str, str] = field(default_factory=dict)  # index -> why it was skipped

    def format(self) -> str:
        c = self.counts
        lines = [f"built {self.out}  (manifest {self.manifest_hash})"]
        for key in (
            "pages",
            "redirects",
            "passages",
            "links",
            "infoboxes",
            "citations",
            "categories",
        ):
            if key in c:
                lines.append(f"  {key:<11} {c[key]:>10,}")
        skipped = sum(self.skipped.values())
        lines.append(f"  {'skipped':<11} {skipped:>10,}")
        for reason, n in sorted(self.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"      {n:>8,}  {reason}")
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in self.stage_seconds.items())
        lines.append(f"  {'time':<11} {self.seconds:>9.1f}s  ({stages})")
        if self.resumed:
            lines.append(f"  resumed from an interrupted build: {', '.join(self.resumed)}")
        for name, why in self.not_built.items():
            lines.append(f"  no {name}: {why}")
        return "\n".join(lines)


def _input_record(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CorpusError(f"input {path} does not exist or is not a file; pass dump files to build")
    return {"name": path.name, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def _hash_record(obj: object) -> bytes:
    return repr(obj).encode("utf-8", "surrogatepass") + b"\n"


@dataclass(frozen=True)
class Engine:
    """Where parsing and encoding run; never part of the result (same manifest either way)."""

    name: EngineName = "local"
    ray_address: str | None = None

    def pool(self) -> Any:
        """A Ray task pool for `read_pages`, or None for the local process pool."""
        if self.name != "ray":
            return None
        from wikisim.index.ray_engine import RayPool

        return RayPool()

    def encoder(self, params: BuildParams) -> tuple[str | None, Any]:
        """(device, chunk encoder) for the dense stage; (None, None) encodes in this process."""
        if self.name != "ray":
            return None, None
        from wikisim.index.dense import ENCODE_BATCH, GPU_ENCODE_BATCH, resolve_model_path
        from wikisim.index.ray_engine import cluster_device, ray_encoder

        device = cluster_device()
        batch = GPU_ENCODE_BATCH if device == "cuda" else ENCODE_BATCH
        return device, ray_encoder(str(resolve_model_path(params.model_path)), device, batch)


def _corpus_stage(
    inputs: Sequence[Path],
    tmp: Path,
    params: BuildParams,
    workers: int,
    progress: bool,
    engine: Engine = Engine(),
) -> dict[str, Any]:
    from wikisim.corpus import PageStoreWriter, read_pages
    from wikisim.corpus.page import Redirect

    for name in (PAGES, PASSAGES):
        (tmp / name).unlink(missing_ok=True)
    pages_hash, passages_hash = hashlib.sha256(), hashlib.sha256()
    counts: Counter[str] = Counter(
        dict.fromkeys(
            ("pages", "redirects", "passages", "links", "infoboxes", "citations", "categories"), 0
        )
    )
    store = PageStoreWriter(tmp / PAGES)
    passages = PassageStoreWriter(tmp / PASSAGES, pages=tmp / PAGES)
    stream = read_pages(list(inputs), workers=workers, pool=engine.pool())
    bar = tqdm(stream, desc="pages", unit=" page", disable=not progress, mininterval=0.5)
    try:
        for item in bar:
            pages_hash.update(_hash_record(item))
            if isinstance(item, Redirect):
                store.add_redirect(item)
                counts["redirects"] += 1
                continue
            store.add_page(item)
            cut = split_page(item, params.passage_words)
            passages.add(cut, item.text)
            for p in cut:
                passages_hash.update(_hash_record(p))
            counts["pages"] += 1
            counts["passages"] += len(cut)
            counts["links"] += len(item.links)
            counts["infoboxes"] += item.infobox is not None
            counts["citations"] += len(item.citations)
            counts["categories"] += len(item.categories)
    finally:
        bar.close()
        store.close()
        passages.close()
    if counts["passages"] == 0:
        raise CorpusError(
            f"no article text found in {', '.join(str(p) for p in inputs)}: nothing to index; "
            "check that the inputs are article dumps, not only redirects"
        )
    skipped = stream.report.skipped_by_reason()
    return {
        "counts": dict(sorted(counts.items())),
        "skipped": {str(k): int(v) for k, v in sorted(skipped.items())},
        "content": {"pages": pages_hash.hexdigest(), "passages": passages_hash.hexdigest()},
    }


def _bm25s_stage(tmp: Path, params: BuildParams, progress: bool) -> dict[str, Any]:
    from wikisim.index.sparse_bm25s import BM25_B, BM25_K1, build_bm25s

    n = _index_stage(
        tmp,
        "bm25s",
        lambda store, part: build_bm25s(
            tqdm(store, desc="bm25s", unit=" passage", total=len(store), disable=not progress), part
        ),
    )
    return {
        "docs": n,
        "method": "lucene",
        "k1": BM25_K1,
        "b": BM25_B,
        "sha256": sha256_tree(tmp / "bm25s"),
    }


def _lucene_stage(tmp: Path, progress: bool, buffer_mb: int, threads: int) -> dict[str, Any]:
    from wikisim.index.sparse_lucene import build_lucene

    return _index_stage(
        tmp,
        "lucene",
        lambda store, part: build_lucene(
            tqdm(store, desc="lucene", unit=" passage", total=len(store), disable=not progress),
            part,
            buffer_mb=buffer_mb,
            threads=threads,
        ),
    )


def bm25s_skipped(params: BuildParams, passages: int) -> str | None:
    """Why this build leaves bm25s out, or None to build it.

    By default (`bm25s=None`) bm25s is built up to `layout.BM25S_MAX_PASSAGES` passages and
    skipped past it when Lucene is built: there the hybrid fuses Lucene (`Index.sparse`), and
    bm25s would cost a third of a full-dump build's time and most of its memory for a
    retriever nothing uses by default. `bm25s=True` builds it anyway, False never.
    """
    if params.bm25s is False:
        return "--no-bm25s"
    limit = layout.BM25S_MAX_PASSAGES
    if params.bm25s is None and params.lucene and passages > limit:
        return (
            f"{passages:,} passages, past BM25S_MAX_PASSAGES ({limit:,}), where the hybrid "
            "fuses Lucene; --bm25s builds it anyway"
        )
    return None


def _dense_stage(
    tmp: Path, params: BuildParams, progress: bool, engine: Engine = Engine()
) -> dict[str, Any]:
    from wikisim.index.dense import build_dense

    device, encoder = engine.encoder(params)
    return _index_stage(
        tmp,
        "dense",
        lambda store, part: build_dense(
            store,
            part,
            model_path=params.model_path,
            kind=params.dense_index,
            progress=progress,
            shards=tmp
            / "dense.shards",  # outside dense.part: a resumed build keeps finished shards
            device=device,
            encoder=encoder,
        ),
    )


def _index_stage(tmp: Path, name: str, build: Callable[[PassageStore, Path], _T]) -> _T:
    """Build one index from the passages into `name`.part, renamed to `name` only when done."""
    store = PassageStore(tmp / PASSAGES)
    part = _fresh(tmp / f"{name}.part")
    result = build(store, part)
    store.close()
    part.replace(tmp / name)
    return result


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _prepare(tmp: Path, key: dict[str, Any]) -> list[str]:
    """Reuse an interrupted build of the same key (returns its finished stages), else start clean."""
    key_file = tmp / ".stages" / "key.json"
    if tmp.exists():
        if key_file.is_file() and key_file.read_bytes() == canonical(key):
            return sorted(p.stem for p in (tmp / ".stages").glob("*.json") if p.stem != "key")
        shutil.rmtree(tmp)
    (tmp / ".stages").mkdir(parents=True)
    key_file.write_bytes(canonical(key))
    return []


def _publish(tmp: Path, out: Path) -> None:
    """Swap the finished build in; an older index at `out` is moved aside, then removed."""
    old = out.parent / f".{out.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        out.replace(old)
    tmp.replace(out)
    if old.exists():
        shutil.rmtree(old)


def build(
    inputs: Sequence[str | Path],
    out: str | Path,
    *,
    workers: int = 1,
    dense: bool = True,
    lucene: bool = True,
    passage_words: int = 150,
    model_path: str | Path | None = None,
    progress: bool = True,
    dense_index: DenseKind = "auto",
    engine: EngineName = "local",
    ray_address: str | None = None,
    bm25s: bool | None = None,
    lucene_buffer_mb: int | None = None,
) -> BuildReport:
    """Build `out` from dump files: page store, passages, and bm25s, Lucene and dense indexes.

    With engine="ray", parsing and dense encoding run on the Ray cluster at `ray_address`
    (a local one of `workers` CPUs when None); the result is the same as engine="local".
    `bm25s=None` builds bm25s unless the corpus is past the limit where the hybrid fuses
    Lucene (`bm25s_skipped`). `lucene_buffer_mb` caps Lucene's indexing buffer (None:
    `LUCENE_BUFFER_MB`); like `workers` (also Lucene's indexing threads, up to this machine's
    CPUs), it changes memory and speed, never the result.

    Raises:
        CorpusError: an input is missing, of an unknown format, truncated or broken; the
            partial build is removed and `out` is left as it was.
        ConfigError: a parameter is out of range, or `out` is a non-index directory.
    """
    start = time.perf_counter()
    if not inputs:
        raise ConfigError("build needs at least one input file (a dump or passage file)")
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    from wikisim.index.sparse_lucene import LUCENE_BUFFER_MB, check_buffer_mb

    buffer_mb = check_buffer_mb(LUCENE_BUFFER_MB if lucene_buffer_mb is None else lucene_buffer_mb)
    lucene_threads = min(workers, os.cpu_count() or 1)  # Lucene indexes on this machine
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine must be 'local' or 'ray', got {engine!r}")
    run_on = Engine(engine, ray_address)
    if engine == "ray":
        from wikisim.index.ray_engine import connect

        workers = max(workers, connect(ray_address, num_cpus=workers if workers > 1 else None))
    out = Path(out)
    if out.exists() and not (out / MANIFEST).is_file() and any(out.iterdir()):
        raise ConfigError(
            f"{out} exists and is not a wikisim index (no {MANIFEST}); choose another --out or remove it"
        )
    params = BuildParams(
        passage_words,
        dense,
        lucene,
        dense_index,
        str(model_path) if model_path is not None else None,
        bm25s,
    )
    paths = [Path(p) for p in inputs]
    key = _build_key(paths, params)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = building_dir(out)
    done = _prepare(tmp, key)
    stages: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("corpus", lambda: _corpus_stage(paths, tmp, params, workers, progress, run_on)),
    ]
    results, timings = _run_stages(stages, tmp, done)
    corpus = results.pop("corpus")
    not_built = {}
    if (why := bm25s_skipped(params, corpus["counts"]["passages"])) is None:
        stages.append(("bm25s", lambda: _bm25s_stage(tmp, params, progress)))
    else:
        not_built["bm25s"] = why
    if lucene:
        stages.append(("lucene", lambda: _lucene_stage(tmp, progress, buffer_mb, lucene_threads)))
    if dense:
        stages.append(("dense", lambda: _dense_stage(tmp, params, progress, run_on)))
    indexes, index_timings = _run_stages(stages[1:], tmp, done)
    manifest = {
        **key,
        "counts": corpus["counts"],
        "skipped": corpus["skipped"],
        "content": corpus["content"],
        "indexes": indexes,
        **({"not_built": not_built} if not_built else {}),
    }
    shutil.rmtree(tmp / ".stages")
    digest = write_manifest(tmp, manifest)
    _publish(tmp, out)
    return BuildReport(
        out,
        digest,
        corpus["counts"],
        corpus["skipped"],
        time.perf_counter() - start,
        timings | index_timings,
        tuple(n for n, _ in stages if n in done),
        not_built,
    )


def _build_key(paths: list[Path], params: BuildParams) -> dict[str, Any]:
    """What the build is a function of: inputs (by content hash), parameters, package versions."""
    versions: dict[str, Any] = package_versions()
    if params.dense:
        from wikisim.index.dense import model_record

        versions["embedding_model"] = model_record(params.model_path)
    return {
        "format": FORMAT,
        "inputs": [_input_record(p) for p in paths],
        "params": _params_record(params),
        "versions": versions,
    }


def _run_stages(
    stages: list[tuple[str, Callable[[], dict[str, Any]]]], tmp: Path, done: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """Each stage's record (read back for stages an interrupted build finished) and its seconds."""
    results: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    for name, run in stages:
        record = tmp / ".stages" / f"{name}.json"
        if name in done:
            results[name] = json.loads(record.read_text(encoding="utf-8"))
            continue
        t0 = time.perf_counter()
        try:
            results[name] = run()
        except CorpusError:  # a broken input: nothing to resume, leave `out` as it was
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        timings[name] = time.perf_counter() - t0
        # written aside, then renamed: a build killed mid-write leaves no empty record to resume from
        part = record.with_name(f"{name}.json.part")
        part.write_bytes(canonical(results[name]))
        part.replace(record)
    return results, timings


def _params_record(params: BuildParams) -> dict[str, Any]:
    record: dict[str, Any] = {
        "passage_words": params.passage_words,
        "dense": params.dense,
        "lucene": params.lucene,
        "bm25s": "auto" if params.bm25s is None else params.bm25s,
    }
    if params.dense:
        record["dense_index"] = params.dense_index
    return record


#: Indexes built from the bundled data on first use, by name (`EnvConfig.index` takes these names).
BUNDLED_INDEXES: dict[str, tuple[Path, ...]] = {
    "sample": (SAMPLE_DUMP,),
    # the sample plus the bundled HotpotQA and MuSiQue corpora: every bundled question's pages
    "sample-qa": (
        SAMPLE_DUMP,
        QA_DIR / "hotpotqa-train-100-corpus.json",
        QA_DIR / "musique-train-100-corpus.json",
    ),
}


def _built_by_this_software(manifest: dict[str, Any]) -> bool:
    """A cached index is reused only as this software would build it (another parser or package
    version can give other pages or rankings: an upgrade rebuilds, never serves stale pages)."""
    versions = {k: v for k, v in manifest.get("versions", {}).items() if k != "embedding_model"}
    return manifest.get("format") == FORMAT and versions == package_versions()


def ensure_bundled_index(name: str = "sample", dense: bool = False) -> Path:
    """A bundled index (`BUNDLED_INDEXES`) built into the cache once (bm25s and Lucene; dense if asked).

    A dense build also serves sparse callers, so it is reused when present; one that other
    software built (format, parser or package versions) is rebuilt.
    """
    if name not in BUNDLED_INDEXES:
        raise ConfigError(f"no bundled index {name!r}; bundled: {sorted(BUNDLED_INDEXES)}")
    root = cache_dir() / "indexes"
    candidates = [root / f"enwiki-2014-{name}-dense"] + (
        [] if dense else [root / f"enwiki-2014-{name}"]
    )
    with cache_lock(f"index-{name}"):
        for path in candidates:
            if (path / MANIFEST).is_file() and _built_by_this_software(read_manifest(path)):
                open_index(path)
                return path
        out = candidates[-1] if not dense else candidates[0]
        build(list(BUNDLED_INDEXES[name]), out, dense=dense, progress=False)
        return out
