"""The executor's parts (token bucket, breaker, policies) and the executor over the local index."""

from __future__ import annotations

import pytest

from wikisim.errors import ConfigError, ToolCallError
from wikisim.tools.base import Backend
from wikisim.tools.cache import CacheMissError, ToolCache
from wikisim.tools.executor import CircuitBreaker, Executor, ExecutorConfig, TokenBucket, ToolPolicy


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
    from wikisim.tools.wiki_backend import WikiBackend

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
    assert [r.outcome for r in ex.pop_trace()] == ["live", "live"]
    assert ex.search(["  Anarchism\t"], 5)[0] == first[0]  # the same call after normalisation
    assert ex.pop_trace()[0].outcome == "cache"
    replay = Executor(wiki, cache=ToolCache(path, "replay-only"))
    assert replay.search(["Albedo", "Anarchism"], 5) == [first[1], first[0]]
    assert replay.visit("Anarchism", "origin  of the word", 100) == page
    with pytest.raises(CacheMissError, match="Anarchism"):
        replay.visit("Anarchism", "a goal never asked", 100)
    assert replay.stats()["search"] == {"calls": 1, "cache": 1}
