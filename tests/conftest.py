"""Session-wide fixtures: the bundled corpus is built once per test session, in a tmp cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wikisim.paths import DATA_DIR

if os.environ.get("PYTEST_XDIST_WORKER"):  # one compute thread a worker: n workers share n cores
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Never read or write the user's cache from tests (`WIKISIM_TEST_CACHE` names one to reuse across runs).

    pytest-xdist's workers share one cache (the session's base temp is one folder per worker,
    under a common parent; `cache_dir()` creates it): what the cache holds is built under
    `cache_lock`, so the bundled index and the converted SmolLM2 are made once per run, not once
    per worker.
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ["WIKISIM_CACHE"] = os.environ.get("WIKISIM_TEST_CACHE") or str(
        shared / "wikisim-cache"
    )
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-tests")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture(scope="session")
def sample_index(_isolated_cache: None) -> Path:
    """The 2014 sample dump built with every backend (Lucene, bm25s, dense): built once.

    Built where `ensure_bundled_index` looks, so code under test that falls back to the
    bundled index (gym.make with no arguments, the demo) reuses it instead of building again.
    """
    from wikisim.index.build import ensure_bundled_index

    return ensure_bundled_index(dense=True)
