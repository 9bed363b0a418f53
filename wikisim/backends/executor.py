"""The tool executor: the one layer every backend call goes through.

Why one layer: the web is slow, rate-limited and flaky, and none of that may reach the
training loop. Per tool the executor applies a concurrency limit, a QPS token bucket,
retries with seeded exponential backoff and jitter on transient errors (tenacity; a 429's
Retry-After is honoured), a circuit breaker per provider, a fallback chain of providers
(say Serper, then SerpAPI, then the local wiki index) and, when every provider failed for
good, degradation: an in-band answer that tells the agent the tool is unavailable, not a
crash. Results go through a `ToolCache` (off / read-write / replay-only).

The executor is itself a `Backend`, so it wraps any backend or per-tool provider chain.
Timeouts are enforced where the waiting happens: the HTTP providers pass `timeout_s` to
httpx; in-process providers run inline on the caller's thread (no thread hand-off, so a
provider that is not thread-safe stays safe).
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import tenacity

from wikisim.backends.base import PageView, ScholarHit
from wikisim.backends.cache import TOOLS, CacheMissError, ToolCache, cache_key, normalize_text
from wikisim.errors import BackendError, ConfigError, ToolCallError
from wikisim.index.base import Hit

UNAVAILABLE_DOCID = "wikisim:unavailable"
TRACE_LIMIT = 1024  # records kept per thread when nobody pops them


class TransientBackendError(BackendError):
    """A failure worth retrying: a timeout, a 429 (with `retry_after` seconds), a 5xx, a cut body."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class CircuitOpenError(BackendError):
    """The provider's breaker is open: it failed repeatedly, so it is skipped for a while."""


@dataclass(frozen=True)
class ToolPolicy:
    """How one tool's calls are limited, retried and degraded.

    Attributes:
        concurrency: calls in flight at once (per executor).
        qps: token-bucket rate (calls/s, burst `burst`); None for no limit.
        burst: token-bucket capacity.
        timeout_s: per-request timeout handed to HTTP providers; also the longest wait for a
            concurrency slot.
        max_attempts: tries per provider (1 = no retry).
        backoff_base_s / backoff_max_s: exponential backoff base * 2**(try-1), capped.
        jitter: fraction of each wait drawn at random (seeded) to spread retry storms.
        breaker_failures: consecutive failures that open a provider's breaker.
        breaker_reset_s: how long it stays open before one trial call (half-open).
        degrade: on final failure answer "tool unavailable" in-band (True) or raise
            `BackendError` (False: for tools the run cannot do without).
    """

    concurrency: int = 8
    qps: float | None = None
    burst: int = 1
    timeout_s: float = 15.0
    max_attempts: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    jitter: float = 0.5
    breaker_failures: int = 5
    breaker_reset_s: float = 30.0
    degrade: bool = True

    def __post_init__(self) -> None:
        checks = {
            "concurrency": self.concurrency >= 1,
            "burst": self.burst >= 1,
            "timeout_s": self.timeout_s > 0,
            "max_attempts": self.max_attempts >= 1,
            "backoff_base_s": self.backoff_base_s >= 0,
            "backoff_max_s": self.backoff_max_s >= 0,
            "jitter": 0 <= self.jitter <= 1,
            "breaker_failures": self.breaker_failures >= 1,
            "breaker_reset_s": self.breaker_reset_s >= 0,
            "qps": self.qps is None or self.qps > 0,
        }
        for name, ok in checks.items():
            if not ok:
                raise ConfigError(f"ToolPolicy.{name}={getattr(self, name)!r} is out of range")


@dataclass(frozen=True)
class ExecutorConfig:
    """One `ToolPolicy` per tool and the seed of the backoff jitter."""

    search: ToolPolicy = field(default_factory=ToolPolicy)
    visit: ToolPolicy = field(default_factory=ToolPolicy)
    scholar: ToolPolicy = field(default_factory=ToolPolicy)
    seed: int = 0

    def policy(self, tool: str) -> ToolPolicy:
        return getattr(self, tool)


@dataclass(frozen=True)
class Attempt:
    provider: str
    tries: int
    error: str  # "" when this provider answered


@dataclass(frozen=True)
class CallRecord:
    """What one tool call took: the step info of an env can carry a list of these."""

    tool: str
    outcome: str  # "cache" | "live" | "fallback" | "degraded"
    provider: str  # who answered ("cache", a provider name, or "" when degraded)
    attempts: tuple[Attempt, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """What `dataclasses.asdict` gives, without its deep copies (the env converts one per call)."""
        return {**vars(self), "attempts": tuple(dict(vars(a)) for a in self.attempts)}


class TokenBucket:
    """`rate` tokens per second, at most `capacity` saved up; `acquire` waits for one."""

    def __init__(self, rate: float, capacity: int, clock: Callable[[], float] = time.monotonic):
        self.rate, self.capacity, self._clock = rate, capacity, clock
        self._tokens, self._stamp = float(capacity), clock()
        self._lock = threading.Lock()

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> None:
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
                self._stamp = now
                if self._tokens >= 1 - 1e-9:  # float dust must not cost another sleep
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.rate
            sleep(wait)


class CircuitBreaker:
    """Closed -> open after `failures` consecutive failures -> half-open after `reset_s`."""

    def __init__(self, failures: int, reset_s: float, clock: Callable[[], float] = time.monotonic):
        self.failures, self.reset_s, self._clock = failures, reset_s, clock
        self._count = 0
        self._opened_at: float | None = None
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self._opened_at >= self.reset_s else "open"

    def allow(self) -> bool:
        with self._lock:
            state = self._state()
            if state == "half-open":
                self._opened_at = self._clock()  # one trial at a time; others see "open"
            return state != "open"

    def record(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self._count, self._opened_at = 0, None
            else:
                self._count += 1
                if self._count >= self.failures:
                    self._opened_at = self._clock()


def _short(err: BaseException) -> str:
    return str(err) or type(err).__name__


class Executor:
    """A `Backend` that runs each tool through limits, retries, breakers, fallbacks and a cache.

    Args:
        providers: one backend for every tool, or per tool a sequence of providers tried in
            order (each needs `.name` and the tool's method).
        config: per-tool policies and the jitter seed.
        cache: a `ToolCache` (None: no cache).
        name: this backend's name; with the provider names it namespaces the cache keys.
        scope: the settings that change the providers' answers (a local index's retriever, its
            settings, and the snippet length); part of the cache namespace, so runs of other
            settings never share answers.
        sleep: how to wait between retries (tests may shorten it; timing never changes results).
        normalize: check calls and collapse whitespace before the providers and the cache see
            them (True), or hand each call over exactly as made and let the providers check it
            (False: for a local backend whose answers and error messages the env shows as-is).
    """

    def __init__(
        self,
        providers: Any,
        config: ExecutorConfig | None = None,
        cache: ToolCache | None = None,
        name: str = "",
        sleep: Callable[[float], None] = time.sleep,
        normalize: bool = True,
        scope: str = "",
    ):
        chains = providers if isinstance(providers, Mapping) else dict.fromkeys(TOOLS, (providers,))
        unknown = set(chains) - set(TOOLS)
        if unknown:
            raise ConfigError(
                f"unknown tools {sorted(unknown)} in providers; expected some of {TOOLS}"
            )
        self.chains: dict[str, tuple[Any, ...]] = {t: tuple(chains.get(t, ())) for t in TOOLS}
        for tool, chain in self.chains.items():
            for p in chain:
                if not callable(getattr(p, tool, None)):
                    raise ConfigError(f"provider {getattr(p, 'name', p)!r} has no {tool}() method")
        self.config = config or ExecutorConfig()
        self.cache = cache if cache is not None and cache.mode != "off" else None
        self.normalize = normalize
        first = next((c[0] for c in self.chains.values() if c), None)
        self.name = name or getattr(first, "name", "executor")
        self.manifest_hash = getattr(first, "manifest_hash", "")
        self._manifest: Mapping[str, Any] = {}
        self._namespace = {
            t: f"{self.name}@{self.manifest_hash}{'/' + scope if scope else ''}:"
            + ",".join(p.name for p in c)
            for t, c in self.chains.items()
        }
        self._sleep = sleep
        self._rng = random.Random(self.config.seed)
        self._rng_lock = threading.Lock()
        self._slots = {
            t: threading.BoundedSemaphore(self.config.policy(t).concurrency) for t in TOOLS
        }
        self._buckets = {
            t: TokenBucket(p.qps, p.burst) for t in TOOLS if (p := self.config.policy(t)).qps
        }
        self._breakers = {
            (t, p.name): CircuitBreaker(
                self.config.policy(t).breaker_failures, self.config.policy(t).breaker_reset_s
            )
            for t, chain in self.chains.items()
            for p in chain
        }
        self._local = threading.local()
        self._stats: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._stats_lock = threading.Lock()

    # --- the Backend protocol -------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self._per_query("search", queries, k)

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]:
        return self._per_query("scholar", queries, k)

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView:
        args = {"url": url, "goal": goal, "max_tokens": max_tokens}
        if self.normalize:
            if not isinstance(url, str) or not url.strip():
                raise ToolCallError(f"visit needs a non-empty url string, got {url!r}")
            args = {"url": url.strip(), "goal": normalize_text(goal), "max_tokens": int(max_tokens)}
        return self._cached("visit", [args], lambda p, todo: [p.visit(**todo[0])])[0]

    # --- observability ----------------------------------------------------------------

    def manifest(self) -> Mapping[str, Any]:
        """What the backend serves (an index's manifest for wiki; empty for the web)."""
        return self._manifest

    def close(self) -> None:
        """Release the cache; subclasses release their clients and indexes too."""
        if self.cache is not None:
            self.cache.close()

    def trace(self) -> list[CallRecord]:
        """The calls this thread made since the last trace (for an env's step info; last TRACE_LIMIT)."""
        trace = getattr(self._local, "trace", None)
        if trace is None:
            return []
        out = list(trace)
        trace.clear()
        return out

    def stats(self) -> dict[str, dict[str, int]]:
        """Cumulative counts per tool: calls, cache hits, retries, fallbacks, degraded, ..."""
        with self._stats_lock:
            return {t: dict(c) for t, c in self._stats.items()}

    def breaker_state(self, tool: str, provider: str) -> str:
        return self._breakers[(tool, provider)].state

    # --- internals --------------------------------------------------------------------

    def _per_query(self, tool: str, queries: Sequence[str], k: int) -> list:
        if self.normalize:
            if isinstance(queries, str) or not isinstance(queries, Sequence):
                raise ToolCallError(f"{tool} needs a list of query strings, got {queries!r}")
            if not isinstance(k, int) or k < 1:
                raise ToolCallError(f"{tool} needs k >= 1, got {k!r}")
            for i, q in enumerate(queries):
                if not isinstance(q, str) or not q.strip():
                    raise ToolCallError(f"{tool} query {i} is empty or not a string: {q!r}")
            queries = [normalize_text(q) for q in queries]
        args = [{"query": q, "k": k} for q in queries]
        return self._cached(
            tool, args, lambda p, todo: getattr(p, tool)([a["query"] for a in todo], k)
        )

    def _cached(
        self, tool: str, args: list[dict[str, Any]], run: Callable[[Any, list], list]
    ) -> list:
        """Serve each item from the cache or, for the misses together, from the provider chain."""
        results: list[Any] = [None] * len(args)
        todo = list(range(len(args)))
        if self.cache is not None:
            keys = [cache_key(self._namespace[tool], tool, a) for a in args]
            todo = []
            for i, key in enumerate(keys):
                entry = self.cache.get(key, tool)
                if entry is not None:
                    results[i] = entry.value
                elif self.cache.mode == "replay-only":
                    raise self.cache.miss(tool, args[i])
                else:
                    todo.append(i)
            if not todo:
                self._record(CallRecord(tool, "cache", "cache"))
                return results
        values, degraded = self._live(tool, [args[i] for i in todo], run)
        for i, value in zip(todo, values, strict=True):
            if self.cache is not None:
                value = self.cache.put(
                    keys[i], self._namespace[tool], tool, args[i], value, degraded
                ).value
            results[i] = value
        return results

    def _live(
        self, tool: str, todo: list[dict[str, Any]], run: Callable[[Any, list], list]
    ) -> tuple[list, bool]:
        policy = self.config.policy(tool)
        attempts: list[Attempt] = []
        for n, provider in enumerate(self.chains[tool]):
            tries = [0]
            try:
                values = self._retrying(
                    tool, provider, policy, functools.partial(run, provider, todo), tries
                )
                if len(values) != len(todo):
                    raise BackendError(
                        f"{provider.name} answered {len(values)} results for {len(todo)} requests"
                    )
            except (ToolCallError, ConfigError, CacheMissError):
                raise  # the caller's mistake or a diverged replay: no provider can fix it
            except Exception as e:  # noqa: BLE001 - any provider failure moves on down the chain
                attempts.append(Attempt(provider.name, tries[0], _short(e)))
                continue
            attempts.append(Attempt(provider.name, tries[0], ""))
            self._record(
                CallRecord(tool, "fallback" if n else "live", provider.name, tuple(attempts))
            )
            return values, False
        self._record(CallRecord(tool, "degraded", "", tuple(attempts)))
        reasons = (
            "; ".join(f"{a.provider}: {a.error} ({a.tries} tries)" for a in attempts)
            or "no provider configured"
        )
        if not policy.degrade:
            raise BackendError(f"{tool} failed on every provider: {reasons}")
        return [_unavailable(tool, a, reasons) for a in todo], True

    def _retrying(
        self, tool: str, provider: Any, policy: ToolPolicy, fn: Callable[[], list], tries: list[int]
    ) -> list:
        breaker = self._breakers[(tool, provider.name)]
        bucket = self._buckets.get(tool)

        def attempt() -> list:
            tries[0] += 1
            if not breaker.allow():
                raise CircuitOpenError(f"circuit open after {policy.breaker_failures} failures")
            if bucket is not None:
                bucket.acquire(self._sleep)
            if not self._slots[tool].acquire(timeout=policy.timeout_s):
                raise TransientBackendError(f"no free {tool} slot within {policy.timeout_s}s")
            try:
                out = fn()
            except (ToolCallError, ConfigError, CacheMissError):
                raise
            except Exception:
                breaker.record(False)
                raise
            finally:
                self._slots[tool].release()
            breaker.record(True)
            return out

        if (
            policy.max_attempts == 1
        ):  # nothing to retry: skip tenacity's bookkeeping, most of a call's overhead
            return attempt()

        def retryable(e: BaseException) -> bool:
            retry_after = getattr(e, "retry_after", None)
            return isinstance(e, TransientBackendError) and (
                retry_after is None or retry_after <= policy.backoff_max_s
            )

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.max_attempts),
            wait=lambda state: self._wait(policy, state),
            retry=tenacity.retry_if_exception(retryable),
            before_sleep=lambda state: self._count(tool, "retries"),
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(attempt)

    def _wait(self, policy: ToolPolicy, state: tenacity.RetryCallState) -> float:
        """Retry-After when the server gave one, else capped exponential backoff with seeded jitter."""
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), policy.backoff_max_s)
        delay = min(policy.backoff_max_s, policy.backoff_base_s * 2 ** (state.attempt_number - 1))
        with self._rng_lock:
            return delay * (1 - policy.jitter * self._rng.random())

    def _record(self, record: CallRecord) -> None:
        if not hasattr(self._local, "trace"):
            self._local.trace = deque(maxlen=TRACE_LIMIT)
        self._local.trace.append(record)
        self._count(record.tool, "calls")
        self._count(record.tool, record.outcome)

    def _count(self, tool: str, what: str) -> None:
        with self._stats_lock:
            self._stats[tool][what] += 1


def _unavailable(tool: str, args: dict[str, Any], reasons: str) -> Any:
    """The in-band "tool unavailable" answer the agent sees instead of a crash."""
    note = f"The {tool} tool is unavailable right now: every provider failed ({reasons}). Try again later or use another tool."
    if tool == "visit":
        return PageView(url=args["url"], title=f"[{tool} unavailable]", found=False, extract=note)
    if tool == "search":
        return [
            Hit(
                docid=UNAVAILABLE_DOCID,
                title=f"[{tool} unavailable]",
                url="",
                snippet=note,
                score=0.0,
            )
        ]
    return [
        ScholarHit(
            title=f"[{tool} unavailable] {note}",
            authors=(),
            year=None,
            venue="",
            doi="",
            url="",
            cited_by=(),
            score=0.0,
        )
    ]
