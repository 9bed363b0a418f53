"""Build settings for a whole dump: bm25s left out past the limit where the hybrid fuses Lucene
(or by --no-bm25s), and Lucene's indexing buffer capped without changing what it returns."""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from wikisim.commands.build import BuildOptions, add_arguments
from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.flags import config_from_args
from wikisim.index import layout, open_index
from wikisim.index.build import build
from wikisim.index.passages import PassageStore
from wikisim.index.sparse_lucene import (
    LUCENE_BUFFER_MB,
    SEARCH_THREADS_VAR,
    LuceneRetriever,
    build_lucene,
    cores,
    search_threads,
    share_cores,
)
from wikisim.paths import DATA_DIR, QA_DIR

SMALL = DATA_DIR / "dumps" / "enwiki-table-markup.xml.bz2"
LUCENE_ONLY: dict[str, Any] = {"dense": False, "progress": False}


def _options(*argv: str) -> BuildOptions:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(BuildOptions, parser.parse_args(["dump.xml", "--out", "x", *argv]))


def test_bm25s_flag_is_three_way() -> None:
    assert _options().bm25s is None and _options().lucene_buffer_mb == LUCENE_BUFFER_MB
    assert _options("--bm25s").bm25s is True
    assert _options("--no-bm25s", "--lucene-buffer-mb", "64").bm25s is False
    assert _options("--lucene-buffer-mb", "64").lucene_buffer_mb == 64


def test_bm25s_skipped_past_the_limit_unless_asked(tmp_path, monkeypatch) -> None:
    under = build([SMALL], tmp_path / "under", **LUCENE_ONLY)
    passages = under.counts["passages"]
    assert "bm25s" in open_index(under.out).retrievers and under.not_built == {}
    monkeypatch.setattr(layout, "BM25S_MAX_PASSAGES", passages - 1)
    past = build([SMALL], tmp_path / "past", **LUCENE_ONLY)
    index = open_index(past.out)
    assert index.retrievers == ("lucene", "lucene-rm3") and not (past.out / "bm25s").exists()
    assert index.manifest["params"]["bm25s"] == "auto"
    assert "past BM25S_MAX_PASSAGES" in index.manifest["not_built"]["bm25s"]
    assert "no bm25s:" in past.format() and past.manifest_hash != under.manifest_hash
    with pytest.raises(IndexNotBuiltError, match="rebuild it with --bm25s"):
        index.retriever("bm25s")
    forced = build([SMALL], tmp_path / "forced", bm25s=True, **LUCENE_ONLY)
    assert "bm25s" in open_index(forced.out).retrievers and forced.not_built == {}
    monkeypatch.setattr(layout, "BM25S_MAX_PASSAGES", 10**9)
    never = build([SMALL], tmp_path / "never", bm25s=False, **LUCENE_ONLY)
    assert open_index(never.out).manifest["not_built"] == {"bm25s": "--no-bm25s"}
    assert "bm25s" not in open_index(never.out).retrievers


def test_no_sparse_index_at_all_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no sparse index"):
        build([SMALL], tmp_path / "x", bm25s=False, lucene=False, **LUCENE_ONLY)
    assert not (tmp_path / "x").exists()


def _segments(path: Path) -> int:
    return len(list(path.glob("*.si")))


def test_lucene_threads_change_speed_not_results(sample_index: Path, tmp_path) -> None:
    """`wikisim build --workers N` indexes with N of Anserini's threads: the doc order follows
    the threads, while records and rankings (ties broken by docid string) do not."""
    store = PassageStore(sample_index / layout.PASSAGES)
    passages = list(itertools.islice(store, 3000))
    one = build_lucene(passages, tmp_path / "one")
    two = build_lucene(passages, tmp_path / "two", threads=2)
    assert one == two
    qa = json.loads((QA_DIR / "musique-train-100.json").read_text(encoding="utf-8"))
    queries = [q["question"] for q in qa[:40]] + ["the", "of the", "war"]
    a, b = (LuceneRetriever(tmp_path / n, store) for n in ("one", "two"))
    assert a.ranked(queries, 50) == b.ranked(queries, 50)
    with pytest.raises(ConfigError, match="threads"):
        build_lucene(passages, tmp_path / "none", threads=0)


def test_lucene_buffer_changes_flushes_not_results(sample_index: Path, tmp_path) -> None:
    store = PassageStore(sample_index / layout.PASSAGES)
    passages = list(itertools.islice(store, 1500))
    small = build_lucene(passages, tmp_path / "small", buffer_mb=1)
    big = build_lucene(passages, tmp_path / "big")
    assert small == big  # the manifest's record: the same index either way
    assert _segments(tmp_path / "small") == _segments(tmp_path / "big") == 1  # flushes merged
    qa = json.loads((QA_DIR / "hotpotqa-train-100.json").read_text(encoding="utf-8"))
    queries = [q["question"] for q in qa[:40]] + ["the", "autism", "of the"]
    a, b = (LuceneRetriever(tmp_path / n, store) for n in ("small", "big"))
    assert a.ranked(queries, 30) == b.ranked(queries, 30)
    with pytest.raises(ConfigError, match="JVM's heap"):
        build_lucene(passages, tmp_path / "huge", buffer_mb=10**7)
    with pytest.raises(ConfigError, match=">= 1"):
        build_lucene(passages, tmp_path / "none", buffer_mb=0)


def test_lucene_segments_are_searched_in_parallel_to_the_same_lists(
    sample_index: Path, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index cut into segments of `segment_passages` (in passage order) is searched one
    thread a segment, and ranks as the one-segment index does, on any number of threads."""
    store = PassageStore(sample_index / layout.PASSAGES)
    passages = list(itertools.islice(store, 1500))
    whole = build_lucene(passages, tmp_path / "whole")
    cut = build_lucene(passages, tmp_path / "cut", segment_passages=400, threads=2)
    assert whole == cut and _segments(tmp_path / "cut") == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "whole"]  # no part left behind
    qa = json.loads((QA_DIR / "hotpotqa-train-100.json").read_text(encoding="utf-8"))
    queries = [q["question"] for q in qa[:40]] + ["the", "autism", "of the", "zzzz"]
    one = LuceneRetriever(tmp_path / "whole", store)
    assert one._topk is not None and one._topk.threads == 1  # one segment: no pool
    expected = {k: one.ranked(queries, k) for k in (10, 30)}
    for threads in (1, 3, 8, None):
        parallel = LuceneRetriever(tmp_path / "cut", store, threads=threads)
        assert parallel._topk is not None
        assert parallel._topk.threads == min(threads or cores(), 4)
        assert {k: parallel.ranked(queries, k) for k in expected} == expected
    with pytest.raises(ConfigError, match="search threads"):
        LuceneRetriever(tmp_path / "cut", store, threads=0)
    monkeypatch.setenv(SEARCH_THREADS_VAR, "2")  # a process's default, as OMP_NUM_THREADS
    from_env = LuceneRetriever(tmp_path / "cut", store)
    assert from_env._topk is not None and from_env._topk.threads == 2
    assert {k: from_env.ranked(queries, k) for k in expected} == expected
    monkeypatch.setenv(SEARCH_THREADS_VAR, "many")
    with pytest.raises(ConfigError, match=r"\$WIKISIM_SEARCH_THREADS.*'many'"):
        LuceneRetriever(tmp_path / "cut", store)
    with pytest.raises(ConfigError, match="segment_passages"):
        build_lucene(passages, tmp_path / "none", segment_passages=0)


def test_search_threads_come_from_the_argument_then_the_environment_then_the_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Processes that share a machine split its cores (`share_cores`), unless the user said."""
    # blank reads as unset; setenv (not delenv of an unset name) makes monkeypatch restore the
    # caller's environment after share_cores below writes os.environ itself
    monkeypatch.setenv(SEARCH_THREADS_VAR, "")
    assert search_threads() == cores() >= 1
    assert search_threads(3) == 3
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ConfigError, match="search threads"):
            search_threads(bad)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    share_cores(6)
    assert os.environ[SEARCH_THREADS_VAR] == "2" and search_threads() == 2
    assert search_threads(5) == 5  # an argument beats the environment
    share_cores(1)  # already set: kept
    assert search_threads() == 2
    monkeypatch.setenv(SEARCH_THREADS_VAR, " ")
    share_cores(64)  # more processes than cores: one thread each
    assert search_threads() == 1
    monkeypatch.setenv(SEARCH_THREADS_VAR, "0")
    with pytest.raises(
        ConfigError, match=r"\$WIKISIM_SEARCH_THREADS must be an integer >= 1, got 0"
    ):
        search_threads()
