"""ToolCache: the JSON form round-trips, the modes behave, and 4 writer processes agree."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict

import pytest

from wikisim.backends.base import PageView, ScholarHit
from wikisim.backends.cache import CacheMissError, ToolCache, cache_key, decode, encode
from wikisim.errors import ConfigError
from wikisim.index.base import Hit
from wikisim.paths import REPO_ROOT

HITS = [
    Hit("1#0", "Ada", "https://en.wikipedia.org/wiki/Ada", "Ada was…", 3.25),
    Hit("2#1", "B", "u", "", 0.1),
]
PAPERS = [
    ScholarHit(
        "On X",
        ("A B", "C D"),
        1999,
        "J. X",
        "10.1/x",
        "https://doi.org/10.1/x",
        ("https://w/A",),
        1.5,
    )
]
PAGE = PageView("https://w/A", "A", True, "lead\n\n## History\n\ntext", ("B", "C"))


@pytest.mark.parametrize(
    ("tool", "value"), [("search", HITS), ("scholar", PAPERS), ("visit", PAGE)]
)
def test_json_form_round_trips_exactly(tool, value):
    assert decode(tool, json.loads(json.dumps(encode(tool, value)))) == value
    as_dicts = asdict(value) if tool == "visit" else [asdict(v) for v in value]
    assert json.dumps(encode(tool, value)) == json.dumps(
        as_dicts
    )  # the wire form of every cache and server


def test_keys_are_order_free_and_namespaced():
    assert cache_key("ns", "search", {"query": "a", "k": 3}) == cache_key(
        "ns", "search", {"k": 3, "query": "a"}
    )
    assert cache_key("ns", "search", {"query": "a", "k": 3}) != cache_key(
        "other", "search", {"query": "a", "k": 3}
    )


def test_modes(tmp_path):
    with pytest.raises(ConfigError, match="'replay'"):
        ToolCache(tmp_path / "c.sqlite", "replay")
    with pytest.raises(ConfigError, match="does not exist"):
        ToolCache(tmp_path / "absent.sqlite", "replay-only")
    off = ToolCache(tmp_path / "off.sqlite", "off")
    assert (
        off.put("k", "ns", "search", {}, HITS, False).value == HITS
        and off.get("k", "search") is None
    )
    assert not (tmp_path / "off.sqlite").exists()

    rw = ToolCache(tmp_path / "c.sqlite")
    args = {"query": "q", "k": 2}
    assert rw.put("bad", "ns", "search", args, [], True).degraded
    assert rw.get("bad", "search") is None  # read-write retries a degraded answer live
    assert (
        rw.put("bad", "ns", "search", args, HITS, False).value == HITS
    )  # a good answer replaces it
    assert (
        rw.put("bad", "ns", "search", args, [], False).value == HITS
    )  # nothing replaces a good one
    rw.put("down", "ns", "visit", {"url": "u"}, PAGE, True)

    replay = ToolCache(tmp_path / "c.sqlite", "replay-only")
    assert replay.get("bad", "search").value == HITS
    assert replay.get("down", "visit").degraded  # replay reproduces degraded answers too
    assert replay.get("nope", "search") is None
    err = replay.miss("search", args)
    assert (
        isinstance(err, CacheMissError) and '"query": "q"' in str(err) and "read-write" in str(err)
    )
    assert len(replay) == 2


WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from wikisim.index.base import Hit
    from wikisim.backends.cache import ToolCache
    path, writer, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    cache = ToolCache(path, busy_timeout_s=30)
    for _ in range(1000):  # bounded wait for the start signal, so the writers really overlap
        if go.exists():
            break
        time.sleep(0.01)
    seen = {}
    for i in range(300):
        j = i if i < 150 else 1000 * writer + i  # 150 keys shared by all writers, 150 own keys
        hit = Hit(f"{j}#0", f"w{writer}", "u", "s", float(j))
        stored = cache.put(f"key{j}", "ns", "search", {"query": str(j)}, [hit], False).value
        seen[j] = stored[0].title
    print(json.dumps(seen))
""")


def test_four_concurrent_writer_processes(tmp_path):
    path, go = tmp_path / "shared.sqlite", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w), str(go)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    time.sleep(0.3)
    go.touch()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append({int(k): v for k, v in json.loads(out).items()})
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = dict(db.execute("SELECT key, value FROM entries").fetchall())
    assert len(rows) == 150 + 4 * 150  # no lost entries
    cache = ToolCache(path, "replay-only")
    for j in range(150):  # every writer got back the one answer the file holds for a shared key
        stored = cache.get(f"key{j}", "search").value[0].title
        assert {o[j] for o in outs} == {stored}
    for w, out in enumerate(outs):
        for j in range(1000 * w + 150, 1000 * w + 300):
            assert out[j] == f"w{w}" and cache.get(f"key{j}", "search").value[0].score == float(j)
