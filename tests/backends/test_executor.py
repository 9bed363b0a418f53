"""The executor's parts (token bucket, breaker, policies), the executor over the local index, and the
env's wiki backend behind it (same observations as the bare index; cache options as for every backend)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from wikisim import ENV_ID
from wikisim.backends.base import Backend
from wikisim.backends.cache import CacheMissError, ToolCache, open_cache
from wikisim.backends.executor import (
    CircuitBreaker,
    Executor,
    ExecutorConfig,
    TokenBucket,
    ToolPolicy,
)
from wikisim.backends.wiki import WikiExecutor
from wikisim.env.core import WikiSimEnv
from wikisim.errors import ConfigError, ToolCallError
from wikisim.paths import cache_dir


class Clock:
    """A settable clock: time passes only when a test (or a recorded sleep) says so."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_token_bucket_spends_its_burst_then_waits_at_the_rate():
    clock = Clock()
    bucket = TokenBucket(rate=10.0, capacity=2, clock=clock)
    for _ in range(4):
        bucket.acquire(clock.sleep)
    assert clock.slept == pytest.approx([0.1, 0.1])
    clock.now += 5  # idle time refills to capacity, not beyond
    bucket.acquire(clock.sleep)
    bucket.acquire(clock.sleep)
    assert len(clock.slept) == 2


def test_circuit_breaker_opens_half_opens_and_closes():
    clock = Clock()
    breaker = CircuitBreaker(failures=2, reset_s=10.0, clock=clock)
    breaker.record(False)
    assert breaker.allow() and breaker.state == "closed"
    breaker.record(False)
    assert breaker.state == "open" and not breaker.allow()
    clock.now += 10
    assert breaker.state == "half-open"
    assert breaker.allow() and not breaker.allow()  # one trial call at a time
    breaker.record(False)
    assert breaker.state == "open"  # the trial failed: open again for reset_s
    clock.now += 10
    assert breaker.allow()
    breaker.record(True)
    assert breaker.state == "closed" and breaker.allow()


@pytest.mark.parametrize("field", ["concurrency", "max_attempts", "timeout_s", "jitter", "qps"])
def test_policy_rejects_out_of_range_values(field):
    bad = {"concurrency": 0, "max_attempts": 0, "timeout_s": 0, "jitter": 1.5, "qps": -1.0}[field]
    with pytest.raises(ConfigError, match=f"ToolPolicy.{field}="):
        ToolPolicy(**{field: bad})


@pytest.fixture(scope="module")
def wiki(sample_index):
    from wikisim.backends.wiki import WikiBackend

    return WikiBackend(sample_index, retriever="bm25s")


def test_executor_is_a_backend_and_validates_calls(wiki):
    ex = Executor(wiki)
    assert isinstance(ex, Backend) and ex.name == "wiki" and ex.manifest_hash == wiki.manifest_hash
    with pytest.raises(ToolCallError, match="list of query strings"):
        ex.search("Anarchism", 3)
    with pytest.raises(ToolCallError, match="k >= 1"):
        ex.search(["Anarchism"], 0)
    with pytest.raises(ToolCallError, match="query 1 is empty"):
        ex.scholar(["a", "  "], 3)
    with pytest.raises(ToolCallError, match="non-empty url"):
        ex.visit("", "goal", 10)
    with pytest.raises(ConfigError, match="has no scholar"):
        Executor({"scholar": [object()]})
    with pytest.raises(ConfigError, match="unknown tools"):
        Executor({"browse": [wiki]})


def test_executor_cache_over_the_local_index(wiki, tmp_path):
    path = tmp_path / "wiki.sqlite"
    ex = Executor(wiki, cache=ToolCache(path), config=ExecutorConfig(seed=1))
    first = ex.search(["Anarchism", "Albedo"], 5)
    assert first == wiki.search(["Anarchism", "Albedo"], 5)
    page = ex.visit("Anarchism", "origin of the word", 100)
    assert page == wiki.visit("Anarchism", "origin of the word", 100)
    assert [r.outcome for r in ex.trace()] == ["live", "live"]
    assert ex.search(["  Anarchism\t"], 5)[0] == first[0]  # the same call after normalisation
    assert ex.trace()[0].outcome == "cache"
    replay = Executor(wiki, cache=ToolCache(path, "replay-only"))
    assert replay.search(["Albedo", "Anarchism"], 5) == [first[1], first[0]]
    assert replay.visit("Anarchism", "origin  of the word", 100) == page
    with pytest.raises(CacheMissError, match="Anarchism"):
        replay.visit("Anarchism", "a goal never asked", 100)
    assert replay.stats()["search"] == {"calls": 1, "cache": 1}


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


#: Calls with runs of whitespace, which reach the index exactly as made.
EDGE_ACTIONS = [
    call("search", query=["Apollo   8\tcrew", "Luanda"]),
    call("scholar", query="lunar  orbit"),
    call("visit", url="https://en.wikipedia.org/wiki/Apollo_8", goal="who  was\ton the crew"),
    call("visit", url=["Apollo  8", "Nowhere page"], goal="capital"),
]


def test_env_wiki_backend_is_an_executor_with_the_bare_index_observations(sample_index, wiki):
    env = WikiSimEnv(
        index=sample_index, python=False, retriever="bm25s"
    )  # the bare backend's retriever
    bare = WikiSimEnv(backend=wiki, python=False, retriever="bm25s")
    assert (
        isinstance(env.backend, WikiExecutor)
        and env.backend.index.manifest_hash == env.manifest_hash
    )
    env.reset(seed=3)
    bare.reset(seed=3)
    for action in EDGE_ACTIONS:
        obs, _, _, _, info = env.step(action)
        bare_obs, _, _, _, bare_info = bare.step(action)
        assert obs == bare_obs
        assert "backend_trace" not in bare_info
        assert all(
            r["provider"] == "wiki" and r["outcome"] == "live" for r in info["backend_trace"]
        )
    assert env.backend.stats() == {
        "search": {"calls": 1, "live": 1},
        "scholar": {"calls": 1, "live": 1},
        "visit": {"calls": 3, "live": 3},
    }


def test_gym_make_takes_cache_options_for_the_wiki_backend(sample_index, tmp_path):
    path = tmp_path / "wiki.sqlite"
    record = gym.make(
        ENV_ID, index=sample_index, python=False, cache_mode="read-write", cache_path=path
    ).unwrapped
    record.reset(seed=0)
    first, *_, info = record.step(call("search", query="Apollo 8"))
    again, *_, info_again = record.step(call("search", query="Apollo 8"))
    assert again == first
    assert [r["outcome"] for r in info["backend_trace"] + info_again["backend_trace"]] == [
        "live",
        "cache",
    ]
    replay = gym.make(
        ENV_ID, index=sample_index, python=False, cache_mode="replay-only", cache_path=path
    ).unwrapped
    replay.reset(seed=0)
    assert replay.step(call("search", query="Apollo 8"))[0] == first
    missed = replay.step(call("search", query="Luanda"))[0]
    assert (
        "Error: search failed on the wiki backend: replay-only cache" in missed
        and "Luanda" in missed
    )
    assert replay.config.cache_mode == "replay-only" and replay.config.cache_path == str(path)
    for other in ({"retriever": "lucene"}, {"snippet_chars": 80}):  # other answers: other keys
        elsewhere = gym.make(
            ENV_ID,
            index=sample_index,
            python=False,
            cache_mode="replay-only",
            cache_path=path,
            **other,
        ).unwrapped
        elsewhere.reset(seed=0)
        assert "replay-only cache" in elsewhere.step(call("search", query="Apollo 8"))[0]
    assert open_cache("read-write", None, "wiki").path == cache_dir() / "wiki-cache.sqlite"
    assert open_cache("off", path, "wiki") is None
    with pytest.raises(ConfigError, match="configure it where it is built"):
        WikiSimEnv(backend=replay.backend, cache_mode="read-write")


@pytest.mark.parametrize("retriever", ["bm25s", "lucene"])
def test_snippet_length_is_an_env_setting(sample_index, retriever):
    from wikisim.env.config import EnvConfig, open_backend

    env = EnvConfig(index=str(sample_index), retriever=retriever)
    default, short = open_backend(env), open_backend(env.replace(snippet_chars=80))
    try:
        wide, narrow = (b.search(["history of anarchism in Spain"], 5)[0] for b in (default, short))
    finally:
        default.close()
        short.close()
    assert [h.url for h in wide] == [h.url for h in narrow]  # the same ranking
    assert max(len(h.snippet) for h in wide) > 80 >= max(len(h.snippet) for h in narrow)
    with pytest.raises(ConfigError, match="snippet_chars=80 needs the wiki backend"):
        open_backend(EnvConfig(backend="remote", url="http://127.0.0.1:9", snippet_chars=80))
    with pytest.raises(ConfigError, match="snippet_chars"):
        EnvConfig(snippet_chars=3)


def test_a_cache_recorded_under_other_fusion_weights_never_answers(sample_index, tmp_path):
    from wikisim.index import open_index
    from wikisim.index.hybrid import FusionParams

    path = tmp_path / "wiki.sqlite"
    record = WikiExecutor(sample_index, "hybrid", cache_mode="read-write", cache_path=path)
    first = record.search(["Apollo 8"], 3)
    record.close()
    replay = WikiExecutor(sample_index, "hybrid", cache_mode="replay-only", cache_path=path)
    assert replay.search(["Apollo 8"], 3) == first
    replay.close()
    index = open_index(sample_index)
    hybrid = index.retriever("hybrid")
    assert "hop_seeds=1" in hybrid.settings and "sparse=bm25s" in hybrid.settings
    hybrid.params = FusionParams(hop_seeds=0)  # e.g. a user's own weights
    other = WikiExecutor(index, "hybrid", cache_mode="replay-only", cache_path=path)
    with pytest.raises(CacheMissError, match="Apollo 8"):
        other.search(["Apollo 8"], 3)
    other.close()
