"""WebBackend against loopback fakes of Serper, SerpAPI and Jina Reader, with faults injected."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from wikisim.backends.base import Backend
from wikisim.backends.cache import CacheMissError
from wikisim.backends.executor import UNAVAILABLE_DOCID, ExecutorConfig
from wikisim.backends.web import WebBackend
from wikisim.errors import BackendError, ConfigError


def make(fake, tmp_path, config, sleeps=None, cache_mode="read-write", **kw):
    return WebBackend(
        env=fake.env(),
        config=config,
        cache_path=tmp_path / "web.sqlite",
        cache_mode=cache_mode,
        sleep=sleeps or time.sleep,
        **kw,
    )


def test_serper_search_wire_format_and_order(fake, tmp_path, fast_config):
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    assert isinstance(web, Backend)
    [hits, other] = web.search(["Ada  Lovelace", "Alan Turing"], k=3)
    assert [h.url for h in hits] == [f"https://example.org/ada-lovelace/{i}" for i in (1, 2, 3)]
    assert (
        hits[0].title == "Ada Lovelace - result 1"
        and hits[0].snippet == "About Ada Lovelace: fact number 1."
    )
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert other[0].url == "https://example.org/alan-turing/1"
    sent = fake.requests["serper"][0]
    assert sent["headers"]["X-API-KEY"] == "test-key" and sent["body"] == {
        "q": "Ada Lovelace",
        "num": 3,
    }
    assert web.trace()[0].provider == "serper"


def test_serpapi_search_and_both_scholar_formats(fake, tmp_path, fast_config):
    web = make(
        fake, tmp_path, fast_config, cache_mode="off", search=["serpapi"], scholar=["serpapi"]
    )
    [hits] = web.search(["graph theory"], k=2)
    assert [h.url for h in hits] == [
        "https://example.org/graph-theory/1",
        "https://example.org/graph-theory/2",
    ]
    assert fake.requests["serpapi"][0]["query"]["engine"] == ["google"]
    [papers] = web.scholar(["graph theory"], k=2)
    assert papers[0].authors == ("A Author", "B Writer") and papers[0].year == 2001
    assert (
        papers[0].doi == "10.1234/graph-theory.1" and papers[0].venue == "Journal of Graph Theory"
    )
    serper = make(fake, tmp_path, fast_config, cache_mode="off", scholar=["serper"])
    [from_serper] = serper.scholar(["graph theory"], k=2)
    assert [dataclasses.astuple(p) for p in from_serper] == [dataclasses.astuple(p) for p in papers]


def test_missing_keys_fail_at_construction(fake, tmp_path, fast_config):
    with pytest.raises(ConfigError, match="SERPER_API_KEY"):
        WebBackend(env={}, cache_mode="off")
    with pytest.raises(ConfigError, match="JINA_API_KEY"):
        WebBackend(env={"SERPER_API_KEY": "k"}, visit=["jina"], cache_mode="off")
    with pytest.raises(ConfigError, match="unknown search provider 'bing'"):
        WebBackend(env=fake.env(), search=["bing"], cache_mode="off")


def test_retries_5xx_with_seeded_exponential_backoff(fake, tmp_path, fast_config, sleeps):
    fake.inject("serper", "500", "503")
    web = make(fake, tmp_path, fast_config, sleeps, cache_mode="off")
    [hits] = web.search(["retry me"], k=2)
    assert len(hits) == 2 and fake.calls["serper"] == 3
    [record] = web.trace()
    assert record.outcome == "live" and record.attempts[0].tries == 3
    first, second = sleeps.waits
    assert 0.005 <= first <= 0.01 and 0.01 <= second <= 0.02  # base 0.01 * 2**n, jitter 50 %
    again = make(fake, tmp_path, fast_config, type(sleeps)(), cache_mode="off")
    fake.inject("serper", "500", "503")
    again.search(["retry me"], k=2)
    assert again._sleep.waits == sleeps.waits  # same seed, same jitter


def test_429_honours_retry_after_and_gives_up_on_long_waits(fake, tmp_path, fast_config, sleeps):
    fake.inject("serper", "429:0.07")
    web = make(fake, tmp_path, fast_config, sleeps, cache_mode="off")
    web.search(["rate limited"], k=1)
    assert sleeps.waits == [0.07]
    fake.inject("serper", "429:60")  # longer than backoff_max_s: move on to SerpAPI at once
    [hits] = web.search(["rate limited twice"], k=1)
    assert hits[0].url == "https://example.org/rate-limited-twice/1"
    assert web.trace()[-1].outcome == "fallback" and sleeps.waits == [0.07]


@pytest.mark.parametrize("fault", ["timeout", "malformed", "truncated"])
def test_transient_faults_are_retried(fake, tmp_path, fast_config, fault):
    fake.inject("serper", fault)
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    start = time.monotonic()
    [hits] = web.search([f"{fault} query"], k=1)
    assert hits[0].url == f"https://example.org/{fault}-query/1"
    [record] = web.trace()
    assert (record.provider, record.attempts[0].tries) == ("serper", 2)
    assert time.monotonic() - start < 4.0  # the 0.5 s timeout fired: the fake hangs for 5 s


def test_fallback_chain_is_recorded(fake, tmp_path, fast_config):
    fake.fail_always("serper", "500")
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    [hits] = web.search(["fallback"], k=1)
    assert hits[0].url == "https://example.org/fallback/1"
    [record] = web.trace()
    assert record.outcome == "fallback" and record.provider == "serpapi"
    assert [(a.provider, a.tries, a.error) for a in record.attempts] == [
        ("serper", 3, "HTTP 500"),
        ("serpapi", 1, ""),
    ]
    assert web.stats()["search"]["fallback"] == 1


def test_degradation_answers_in_band_or_raises_when_critical(fake, tmp_path, fast_config):
    fake.fail_always("serper", "500")
    fake.fail_always("serpapi", "401")  # a permanent error: no retry, straight down the chain
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    [hits] = web.search(["nobody answers"], k=5)
    assert hits[0].docid == UNAVAILABLE_DOCID and "search tool is unavailable" in hits[0].snippet
    assert (
        "serper: HTTP 500 (3 tries)" in hits[0].snippet and "serpapi: HTTP 401" in hits[0].snippet
    )
    assert fake.calls["serpapi"] == 1
    strict = dataclasses.replace(
        fast_config, search=dataclasses.replace(fast_config.search, degrade=False)
    )
    with pytest.raises(BackendError, match="search failed on every provider"):
        make(fake, tmp_path, strict, cache_mode="off").search(["nobody answers"], k=5)


def test_circuit_breaker_opens_skips_and_recovers(fake, tmp_path, fast_config):
    policy = dataclasses.replace(fast_config.search, breaker_failures=2, breaker_reset_s=1.0)
    web = make(fake, tmp_path, dataclasses.replace(fast_config, search=policy), cache_mode="off")
    fake.fail_always("serper", "500")
    web.search(["first"], k=1)
    assert fake.calls["serper"] == 2 and web.breaker_state("search", "serper") == "open"
    web.search(["second"], k=1)
    assert fake.calls["serper"] == 2  # skipped while open
    assert "circuit open" in web.trace()[-1].attempts[0].error
    fake.fail_always("serper", None)
    time.sleep(1.05)
    [hits] = web.search(["third"], k=1)
    assert (
        web.trace()[-1].provider == "serper" and web.breaker_state("search", "serper") == "closed"
    )
    assert hits[0].url == "https://example.org/third/1"


def test_visit_through_jina_goal_extract_and_not_found(fake, tmp_path, fast_config):
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    page = web.visit("https://example.org/wiki/Snow_Valley", "when was it found by explorers", 60)
    assert page.found and page.title == "Snow Valley"
    assert "## History" in page.extract and "1901" in page.extract
    assert fake.requests["jina"][0]["headers"]["Authorization"] == "Bearer test-key"
    assert not web.visit("https://example.org/missing", "anything", 60).found


def test_visit_direct_fetch_with_trafilatura_and_fallback_from_jina(fake, tmp_path, fast_config):
    web = make(
        fake,
        tmp_path,
        fast_config,
        cache_mode="off",
        visit=["direct"],
        fetch_allow=["127.0.0.1/32"],
    )
    page = web.visit(f"{fake.url}/site/Snow_Valley", "climate between mountains", 80)
    assert page.found and page.title == "Snow Valley" and "cold and dry" in page.extract
    assert "newsletter" not in page.extract and "cookie" not in page.extract
    assert not web.visit(f"{fake.url}/site/missing", "x", 80).found
    chained = make(fake, tmp_path, fast_config, cache_mode="off", fetch_allow=["127.0.0.1/32"])
    fake.fail_always("jina", "500")
    page2 = chained.visit(f"{fake.url}/site/Snow_Valley", "climate between mountains", 80)
    assert page2 == page and chained.trace()[-1].provider == "direct"


def test_cache_makes_inconsistent_results_stable_and_replay_exact(fake, tmp_path, fast_config):
    fake.inconsistent = True
    live_a = make(fake, tmp_path, fast_config, cache_mode="off").search(["drift"], k=3)
    live_b = make(fake, tmp_path, fast_config, cache_mode="off").search(["drift"], k=3)
    assert live_a != live_b  # the fake engine drifts between calls
    recorder = make(fake, tmp_path, fast_config)
    run = [
        recorder.search(["drift", "other"], k=3),
        recorder.visit("https://example.org/A_b", "history", 40),
        recorder.scholar(["drift"], k=2),
        recorder.search(["drift"], k=3),
    ]
    assert run[3][0] == run[0][0]
    calls = sum(fake.calls.values())
    replay = make(fake, tmp_path, fast_config, cache_mode="replay-only")
    again = [
        replay.search(["drift", "other"], k=3),
        replay.visit("https://example.org/A_b", "history", 40),
        replay.scholar(["drift"], k=2),
        replay.search([" drift "], k=3),
    ]
    assert again == run and sum(fake.calls.values()) == calls  # no live call at all
    with pytest.raises(CacheMissError, match="never|no recorded search call"):
        replay.search(["a query never recorded"], k=3)


def test_no_episode_lost_under_random_faults(fake, tmp_path, fast_config):
    faults = ["500", "timeout", "429:0.01", "malformed", "truncated", "slow:0.05", "503"]
    for i in range(30):  # seeded, varied fault mix across both search providers and Jina
        fake.inject(["serper", "serpapi", "jina"][i % 3], faults[(i * 5) % len(faults)])
    web = make(fake, tmp_path, fast_config, cache_mode="off")

    def episode(i: int) -> tuple[bool, bool]:
        """(search answered, visit answered); a degraded answer must say so, never be junk."""
        [hits] = web.search([f"episode {i}"], k=2)
        page = web.visit(f"https://example.org/wiki/Topic_{i}", "history", 40)
        searched = hits[0].docid != UNAVAILABLE_DOCID
        assert searched or "unavailable" in hits[0].snippet
        assert page.found or page.title == "[visit unavailable]"
        return searched, page.found

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(episode, range(24)))
    assert len(outcomes) == 24  # every episode finished: none raised, none hung
    stats = web.stats()
    assert stats["search"]["calls"] == stats["visit"]["calls"] == 24
    assert sum(not s for s, _ in outcomes) == stats["search"].get("degraded", 0)
    assert sum(not v for _, v in outcomes) == stats["visit"].get("degraded", 0)
    assert sum(s and v for s, v in outcomes) >= 18  # 30 faults over 48 calls: retries absorb most
    assert stats["search"]["retries"] + stats["visit"]["retries"] >= 10


def test_concurrency_and_qps_limits(fake, tmp_path, fast_config):
    limited = dataclasses.replace(fast_config.search, concurrency=2)
    web = make(fake, tmp_path, dataclasses.replace(fast_config, search=limited), cache_mode="off")
    for _ in range(8):
        fake.inject("serper", "slow:0.05")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: web.search([f"q{i}"], k=1), range(8)))
    assert fake.max_in_flight == 2
    rated = dataclasses.replace(fast_config.search, qps=20.0, burst=1)
    web2 = make(fake, tmp_path, ExecutorConfig(search=rated), cache_mode="off")
    start = time.monotonic()
    for i in range(6):
        web2.search([f"rate {i}"], k=1)
    assert time.monotonic() - start >= 0.24  # 5 waits of 1/20 s after the first token


def test_stats_count_each_retry_once(fake, tmp_path, fast_config):
    fake.fail_always("serper", "500")
    web = make(fake, tmp_path, fast_config, cache_mode="off")
    web.search(["counted"], k=1)
    assert (
        web.stats()["search"]["retries"] == 2
    )  # 3 tries on serper = 2 retries; serpapi answered at once
