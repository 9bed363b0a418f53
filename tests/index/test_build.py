"""The build is atomic and resumable: a broken input or a killed build never looks complete,
and finishing an interrupted build gives the manifest hash of a clean one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from wikisim.errors import ConfigError, CorpusError, IndexNotBuiltError
from wikisim.index import build as build_module
from wikisim.index import manifest as manifest_module
from wikisim.index import open_index
from wikisim.index.build import build, ensure_bundled_index
from wikisim.index.layout import building_dir
from wikisim.index.manifest import read_manifest
from wikisim.paths import DATA_DIR, REPO_ROOT, SAMPLE_DUMP

SPARSE = {"dense": False, "lucene": False, "progress": False}
SMALL = DATA_DIR / "dumps" / "enwiki-table-markup.xml.bz2"  # where only the mechanics matter


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("clean") / "sample"
    report = build([SAMPLE_DUMP], out, **SPARSE)
    return out, report.manifest_hash


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("small") / "table-markup"
    return out, build([SMALL], out, **SPARSE).manifest_hash


def test_clean_build_is_complete(clean) -> None:
    out, digest = clean
    assert sorted(p.name for p in out.iterdir()) == [
        "bm25s",
        "manifest.json",
        "pages.sqlite",
        "passages.sqlite",
    ]
    assert not building_dir(out).exists()
    index = open_index(out)
    assert index.manifest_hash == digest
    assert index.manifest["counts"]["pages"] == 106 and index.manifest["counts"]["redirects"] > 0
    assert index.manifest["counts"]["passages"] == len(index.passages)


def test_truncated_dump_fails_clearly_and_leaves_nothing(tmp_path) -> None:
    truncated = tmp_path / "enwiki-truncated.xml.bz2"
    data = SAMPLE_DUMP.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    out = tmp_path / "index"
    with pytest.raises(CorpusError, match="enwiki-truncated.xml.bz2"):
        build([truncated], out, **SPARSE)
    assert not out.exists() and not building_dir(out).exists()
    with pytest.raises(IndexNotBuiltError, match="no index at"):
        open_index(out)


def test_leftover_junk_build_dir_restarts_cleanly(small, tmp_path) -> None:
    out = tmp_path / "index"
    junk = building_dir(out)
    (junk / "bm25s").mkdir(parents=True)
    (junk / "pages.sqlite").write_bytes(b"half a database")
    with pytest.raises(IndexNotBuiltError, match="interrupted"):
        open_index(out)
    report = build([SMALL], out, **SPARSE)
    # built in another directory, from a dirty start: the same hash (no paths or clock in it)
    assert report.manifest_hash == small[1] and report.resumed == ()
    assert not junk.exists()


def test_killed_build_resumes_to_the_same_hash(clean, tmp_path) -> None:
    out = tmp_path / "index"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wikisim",
            "build",
            str(SAMPLE_DUMP),
            "--out",
            str(out),
            "--no-dense",
            "--no-lucene",
            "--quiet",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stage = building_dir(out) / ".stages" / "corpus.json"
    deadline = time.monotonic() + 120
    while not stage.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert stage.exists(), "the build ended before it could be killed after its corpus stage"
    assert not out.exists()
    # a kill while a record is written leaves only its part, which the resumed build ignores
    (stage.parent / "bm25s.json.part").write_bytes(b"")
    with pytest.raises(IndexNotBuiltError, match="interrupted"):
        open_index(out)
    report = build([SAMPLE_DUMP], out, **SPARSE)
    assert "corpus" in report.resumed
    assert report.manifest_hash == clean[1] == open_index(out).manifest_hash


def test_half_built_and_foreign_directories(tmp_path) -> None:
    half = tmp_path / "half"
    half.mkdir()
    (half / "pages.sqlite").write_bytes(b"")
    with pytest.raises(IndexNotBuiltError, match="no manifest.json .*found: pages.sqlite"):
        open_index(half)
    with pytest.raises(ConfigError, match="not a wikisim index"):
        build([SAMPLE_DUMP], half, **SPARSE)
    with pytest.raises(CorpusError, match="does not exist"):
        build([tmp_path / "nope.xml"], tmp_path / "x", **SPARSE)


def test_rebuild_replaces_an_index_and_sample_index_is_cached(small, tmp_path) -> None:
    out = tmp_path / "index"
    other = build([SMALL], out, passage_words=40, **SPARSE)
    assert other.manifest_hash != small[1]  # a different passage budget is a different index
    assert build([SMALL], out, **SPARSE).manifest_hash == small[1]
    assert open_index(out).manifest_hash == small[1]
    first = ensure_bundled_index()
    mtime = (first / "manifest.json").stat().st_mtime_ns
    assert ensure_bundled_index() == first and (first / "manifest.json").stat().st_mtime_ns == mtime
    assert "lucene" in open_index(first).retrievers


def test_a_cached_bundled_index_other_software_built_is_rebuilt(monkeypatch) -> None:
    """After an upgrade that parses the same dump to other pages (a new PARSER) or a package
    that ranks otherwise, the bundled index is rebuilt rather than served stale."""
    monkeypatch.setitem(build_module.BUNDLED_INDEXES, "tiny", (SMALL,))
    monkeypatch.setattr(build_module, "build", partial(build, lucene=False))
    first = ensure_bundled_index("tiny")
    mtime = (first / "manifest.json").stat().st_mtime_ns
    assert ensure_bundled_index("tiny") == first
    assert (first / "manifest.json").stat().st_mtime_ns == mtime  # this software's: reused
    monkeypatch.setattr(manifest_module, "PARSER", manifest_module.PARSER + 1)
    assert ensure_bundled_index("tiny") == first
    rebuilt = read_manifest(first)
    assert (first / "manifest.json").stat().st_mtime_ns != mtime
    assert rebuilt["versions"]["wikisim-parser"] == str(manifest_module.PARSER)


def test_processes_starting_together_take_the_cache_lock_in_turn(tmp_path) -> None:
    """What `ensure_bundled_index` and `smollm2_dir` build under: never two builders at once."""
    log = tmp_path / "log"
    code = (
        "import os, sys, time\n"
        "from wikisim.paths import cache_lock\n"
        "with cache_lock('x'):\n"
        "    with open(sys.argv[1], 'a') as f: f.write(f'in {os.getpid()}\\n')\n"
        "    time.sleep(0.5)\n"
        "    with open(sys.argv[1], 'a') as f: f.write(f'out {os.getpid()}\\n')\n"
    )
    env = {**os.environ, "WIKISIM_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(log)], env=env) for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [kind for kind, _ in lines] == ["in", "out"] * 3
    assert all(lines[i][1] == lines[i + 1][1] for i in range(0, 6, 2))
