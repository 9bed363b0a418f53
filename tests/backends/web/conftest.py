"""Fixtures for web-backend tests: a fresh fake provider server per test, fast policies."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fakes.providers import FakeProviders

from wikisim.backends.executor import ExecutorConfig, ToolPolicy

FAST = ToolPolicy(
    timeout_s=0.5,
    max_attempts=3,
    backoff_base_s=0.01,
    backoff_max_s=0.2,
    jitter=0.5,
    breaker_failures=50,
    breaker_reset_s=0.2,
)


@pytest.fixture
def fake() -> Iterator[FakeProviders]:
    with FakeProviders(hang_s=5.0) as server:  # far beyond the 0.5 s client timeout
        yield server


@pytest.fixture
def fast_config() -> ExecutorConfig:
    return ExecutorConfig(search=FAST, visit=FAST, scholar=FAST, seed=7)


class SleepLog:
    """Really sleeps (the waits are small in tests) and records each wait."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)


@pytest.fixture
def sleeps() -> SleepLog:
    return SleepLog()
