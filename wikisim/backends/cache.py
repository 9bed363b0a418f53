"""A persistent SQLite cache of tool results, and the one JSON form of those results.

Why: web calls are slow, cost money and change over time. Recording every answer keyed by
the tool and its normalised arguments lets a later run replay a web episode byte for byte
(`mode="replay-only"`, where a miss is an error instead of a live call). Many env worker
processes may share one file: WAL journal, a busy timeout and "first answer wins" inserts
keep it consistent; every process returns the stored answer, so two workers that raced on
the same key still see the same result.

The JSON form (`encode`/`decode`) is also the wire format of `wikisim serve`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from wikisim.backends.base import PageView, ScholarHit
from wikisim.errors import ConfigError, WikisimError
from wikisim.index.base import Hit
from wikisim.paths import cache_dir

CacheMode = Literal["off", "read-write", "replay-only"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)
TOOLS = ("search", "visit", "scholar")


class CacheMissError(WikisimError):
    """Replay-only mode met a call that the recorded run never made: the replay diverged."""


# --- the JSON form of results (per query for search/scholar, per page for visit) ---------


def encode(tool: str, value: Any) -> Any:
    """A result as plain JSON data: a list of hit dicts, or one page dict.

    The records are flat and frozen, so a copy of each one's fields is what `asdict` would give,
    without its recursive deep copy (which cost `wikisim serve` a third of a search's time).
    """
    if tool == "visit":
        return dict(vars(value))
    return [dict(vars(h)) for h in value]


def decode(tool: str, data: Any) -> Any:
    """The inverse of `encode`: frozen records with tuples where the records have tuples."""
    if tool == "search":
        return [Hit(**h) for h in data]
    if tool == "scholar":
        return [
            ScholarHit(**{**h, "authors": tuple(h["authors"]), "cited_by": tuple(h["cited_by"])})
            for h in data
        ]
    if tool == "visit":
        return PageView(**{**data, "suggestions": tuple(data["suggestions"])})
    raise ConfigError(f"unknown tool {tool!r}; expected one of {TOOLS}")


def normalize_text(text: str) -> str:
    """Collapse runs of whitespace: `"  a\\tb "` and `"a b"` are the same call."""
    return " ".join(text.split())


def cache_key(namespace: str, tool: str, args: dict[str, Any]) -> str:
    """A stable digest of (who answers, which tool, normalised arguments)."""
    blob = json.dumps(
        [namespace, tool, args], sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    value: Any  # decoded result
    degraded: bool  # True when the recorded answer was the "tool unavailable" fallback


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    value TEXT NOT NULL,
    degraded INTEGER NOT NULL
) WITHOUT ROWID
"""


class ToolCache:
    """Tool results in one SQLite file, shared safely by threads and processes.

    Args:
        path: the SQLite file (created with its parent folder in the modes that write).
        mode: "off" (never read or write), "read-write" (serve hits, record misses) or
            "replay-only" (serve hits; a miss raises `CacheMissError`).
        busy_timeout_s: how long a writer waits for another process' lock.
    """

    def __init__(
        self, path: str | Path, mode: CacheMode = "read-write", busy_timeout_s: float = 30.0
    ):
        if mode not in CACHE_MODES:
            raise ConfigError(f"cache mode {mode!r} is not one of {CACHE_MODES}")
        if busy_timeout_s <= 0:
            raise ConfigError(f"busy_timeout_s must be > 0, got {busy_timeout_s}")
        self.path = Path(path)
        self.mode: CacheMode = mode
        self._busy_ms = int(busy_timeout_s * 1000)
        self._local = threading.local()
        if mode == "replay-only" and not self.path.exists():
            raise ConfigError(
                f"replay-only cache {self.path} does not exist; record a run first with mode='read-write'"
            )
        if mode != "off":
            self._conn()  # create the schema now: errors surface at construction

    def _conn(self) -> sqlite3.Connection:
        """One connection per thread and process (sqlite3 connections are neither shareable)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        if self.mode == "read-write":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        if self.mode == "read-write":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str, tool: str) -> CacheEntry | None:
        """The recorded answer, or None. Read-write mode skips degraded answers (retry live)."""
        if self.mode == "off":
            return None
        row = (
            self._conn()
            .execute("SELECT value, degraded FROM entries WHERE key=?", (key,))
            .fetchone()
        )
        if row is None or (row[1] and self.mode == "read-write"):
            return None
        return CacheEntry(decode(tool, json.loads(row[0])), bool(row[1]))

    def put(
        self, key: str, namespace: str, tool: str, args: dict[str, Any], value: Any, degraded: bool
    ) -> CacheEntry:
        """Record an answer; returns what the file holds afterwards (the first good answer wins).

        A good answer replaces a degraded one; nothing replaces a good one.
        """
        if self.mode != "read-write":
            return CacheEntry(value, degraded)
        payload = json.dumps(encode(tool, value), ensure_ascii=False, separators=(",", ":"))
        args_json = json.dumps(args, sort_keys=True, ensure_ascii=False)
        conn = self._conn()
        conn.execute(
            "INSERT INTO entries(key, namespace, tool, args, value, degraded) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value, degraded=0 "
            "WHERE entries.degraded=1 AND excluded.degraded=0",
            (key, namespace, tool, args_json, payload, int(degraded)),
        )
        row = conn.execute("SELECT value, degraded FROM entries WHERE key=?", (key,)).fetchone()
        return CacheEntry(decode(tool, json.loads(row[0])), bool(row[1]))

    def miss(self, tool: str, args: dict[str, Any]) -> CacheMissError:
        return CacheMissError(
            f"replay-only cache {self.path} has no recorded {tool} call with arguments "
            f"{json.dumps(args, ensure_ascii=False)}; the replay diverged from the recorded run "
            "(re-record with cache mode 'read-write' to allow live calls)"
        )

    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        return self._conn().execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def open_cache(mode: CacheMode, path: str | Path | None, backend: str) -> ToolCache | None:
    """The cache a backend was asked for: None when off, else `path` (default `cache_dir()/<backend>-cache.sqlite`).

    Why one helper: every backend (wiki, remote, web) takes the same `cache_mode`/`cache_path` options.
    """
    if mode == "off":
        return None
    return ToolCache(path if path is not None else cache_dir() / f"{backend}-cache.sqlite", mode)
