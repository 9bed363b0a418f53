"""A build is a pure function of its inputs: separate processes under different string-hash
seeds give the same manifest hash and the same bytes (Lucene's files aside: its segment
ids are random, so its manifest entry hashes what went in)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikisim.index.manifest import MANIFEST, manifest_hash
from wikisim.paths import DATA_DIR, SAMPLE_DUMP


def _build(inputs: list[Path], out: Path, seed: str, *flags: str) -> dict[str, str]:
    """Build in a fresh interpreter under PYTHONHASHSEED=seed; manifest hash and every file's sha256."""
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "wikisim",
            "build",
            *map(str, inputs),
            "--out",
            str(out),
            "--quiet",
            *flags,
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    files = {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }
    files["manifest hash"] = manifest_hash(json.loads((out / MANIFEST).read_text(encoding="utf-8")))
    return files


def test_sample_builds_alike_under_two_hash_seeds(tmp_path: Path) -> None:
    a = _build([SAMPLE_DUMP], tmp_path / "a", "1", "--no-dense", "--no-lucene")
    b = _build([SAMPLE_DUMP], tmp_path / "b", "2", "--no-dense", "--no-lucene")
    assert {"bm25s/vocab.index.json", "pages.sqlite", "passages.sqlite"} <= a.keys()
    assert a == b


@pytest.mark.slow
def test_ray_engine_on_two_cpu_workers_builds_the_same_index(tmp_path: Path) -> None:
    """`--engine ray` on a local Ray cluster of 2 CPUs (parsing tasks, encoder actors) and one
    process, under two hash seeds: the same bytes, the dense vectors and IVF's k-means included."""
    pytest.importorskip("ray")
    lines = (
        (DATA_DIR / "dumps" / "wiki18-passages-1000.jsonl").read_text(encoding="utf-8").splitlines()
    )
    small = tmp_path / "wiki18-60.jsonl"
    small.write_text("\n".join(lines[:60]) + "\n", encoding="utf-8")
    wikitext = DATA_DIR / "dumps" / "enwiki-table-markup.xml.bz2"  # parsed in Ray tasks
    local = _build(
        [wikitext, small], tmp_path / "local", "5", "--no-lucene", "--dense-index", "ivf"
    )
    ray = _build(
        [wikitext, small],
        tmp_path / "ray",
        "6",
        "--no-lucene",
        "--dense-index",
        "ivf",
        "--engine",
        "ray",
        "--workers",
        "2",
    )
    assert "dense/index.faiss" in local and ray == local


def test_every_package_a_manifest_hash_holds_is_pinned() -> None:
    """A manifest's hash holds the versions of `RESULT_PACKAGES`, and the shipped tasks carry the
    bundled index's hash: a package left to float changes it on the next fresh install (session
    56: transformers 5.25.0 reached the package index and the shipped tasks no longer matched)."""
    import tomllib
    from importlib.metadata import version

    from wikisim.index.manifest import RESULT_PACKAGES
    from wikisim.paths import REPO_ROOT

    pins = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = dict(p.split("==") for p in pins if "==" in p)
    for name in RESULT_PACKAGES:
        if name == "wikisim":
            continue
        assert name in pinned, f"{name} enters the manifest hash: pin it in pyproject.toml"
        assert version(name).split("+")[0] == pinned[name], name
