"""Where the bundled data lives and where built artefacts are cached."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent  # the checkout (README, notebooks); not part of an installed wheel
#: The bundled dumps, QA sets and tasks: `wikisim/data` links to the checkout's top-level `data/`,
#: and an installed wheel carries the files themselves there.
DATA_DIR = Path(__file__).parent / "data"
SAMPLE_DUMP = DATA_DIR / "dumps" / "enwiki-2014-sample.xml.bz2"
QA_DIR = DATA_DIR / "qa"


def cache_dir() -> Path:
    """Built indexes and converted models go here; `WIKISIM_CACHE` overrides (tests use a tmp dir)."""
    root = os.environ.get("WIKISIM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")), "wikisim"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """Held while `name` is looked up or built in the cache: processes that start together on a
    fresh cache (vector-env workers, test workers) build it once, the others wait and find it."""
    with open(cache_dir() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
