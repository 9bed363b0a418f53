"""WebBackend: the real web behind the same `Backend` interface as the wiki index.

Why: a policy trained in the simulator must run unchanged on the web
(`gym.make("WikiSim-v0", backend="web")`). Every provider call goes through the executor
(limits, retries, breakers, fallback, degradation) and the cache, so a web run can be
replayed byte for byte later with `cache_mode="replay-only"`.

Keys come from the environment (SERPER_API_KEY, SERPAPI_API_KEY, JINA_API_KEY) and base
URLs from SERPER_BASE_URL, SERPAPI_BASE_URL, JINA_BASE_URL (tests point them at loopback
fakes). A provider asked for without its key is a `ConfigError` here, at construction, not
a failure in the middle of an episode.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from wikisim import __version__
from wikisim.backends.base import Backend
from wikisim.backends.cache import CacheMode, open_cache
from wikisim.backends.executor import Executor, ExecutorConfig
from wikisim.backends.web.search import SerpAPIScholar, SerpAPISearch, SerperScholar, SerperSearch
from wikisim.backends.web.visit import DirectFetch, JinaReader
from wikisim.errors import ConfigError

KEY_VARS = {"serper": "SERPER_API_KEY", "serpapi": "SERPAPI_API_KEY", "jina": "JINA_API_KEY"}
BASE_VARS = {"serper": "SERPER_BASE_URL", "serpapi": "SERPAPI_BASE_URL", "jina": "JINA_BASE_URL"}
DEFAULT_BASES = {
    "serper": "https://google.serper.dev",
    "serpapi": "https://serpapi.com",
    "jina": "https://r.jina.ai",
}
CHOICES = {
    "search": ("serper", "serpapi"),
    "visit": ("jina", "direct"),
    "scholar": ("serper", "serpapi"),
}


class WebBackend(Executor):
    """Search, visit and scholar on the live web, through the executor and a replayable cache.

    Args:
        search / visit / scholar: provider names in fallback order (None: every provider
            whose key is set; visit always ends with "direct").
        fallback: a backend tried last for every tool (e.g. the local wiki index).
        cache_path: the SQLite cache (None: `cache_dir()/web-cache.sqlite`).
        cache_mode: "read-write" (default), "replay-only" or "off".
        config: per-tool policies (timeouts, retries, breaker, limits).
        env: where keys and base URLs are read (default: `os.environ`).
        fetch_allow: networks the direct fetch may reach although not public (default none:
            loopback, private and link-local addresses are refused), e.g. ("127.0.0.1/32",).
    """

    def __init__(
        self,
        *,
        search: Sequence[str] | None = None,
        visit: Sequence[str] | None = None,
        scholar: Sequence[str] | None = None,
        fallback: Backend | None = None,
        cache_path: str | Path | None = None,
        cache_mode: CacheMode = "read-write",
        config: ExecutorConfig | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        fetch_allow: Sequence[str] = (),
    ):
        env = os.environ if env is None else env
        config = config or ExecutorConfig()
        wanted = {"search": search, "visit": visit, "scholar": scholar}
        chosen = {tool: self._choose(tool, names, env) for tool, names in wanted.items()}
        if not chosen["search"] and fallback is None:
            raise ConfigError(
                "the web backend needs a search API key: set SERPER_API_KEY (serper.dev) or "
                "SERPAPI_API_KEY (serpapi.com), or pass fallback=<a local backend>"
            )
        self.client = httpx.Client(
            headers={"User-Agent": f"wikisim/{__version__} (+research agent)"},
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        )
        chains: dict[str, list[Any]] = {}
        for tool, names in chosen.items():
            timeout_s = config.policy(tool).timeout_s
            chains[tool] = [self._provider(tool, n, env, timeout_s, fetch_allow) for n in names]
            if fallback is not None:
                chains[tool].append(fallback)
        super().__init__(
            chains,
            config=config,
            cache=open_cache(cache_mode, cache_path, "web"),
            name="web",
            sleep=sleep,
        )
        self.manifest_hash = "web"

    @staticmethod
    def _choose(tool: str, names: Sequence[str] | None, env: Mapping[str, str]) -> tuple[str, ...]:
        if names is None:
            keyed = tuple(n for n in CHOICES[tool] if n == "direct" or env.get(KEY_VARS[n]))
            return keyed
        names = (names,) if isinstance(names, str) else tuple(names)
        for n in names:
            if n not in CHOICES[tool]:
                raise ConfigError(f"unknown {tool} provider {n!r}; choose from {CHOICES[tool]}")
            if n != "direct" and not env.get(KEY_VARS[n]):
                raise ConfigError(
                    f"{tool} provider {n!r} needs an API key: set the environment variable {KEY_VARS[n]}"
                )
        return names

    def _provider(
        self,
        tool: str,
        name: str,
        env: Mapping[str, str],
        timeout_s: float,
        fetch_allow: Sequence[str],
    ) -> Any:
        if name == "direct":
            return DirectFetch(client=self.client, timeout_s=timeout_s, allow=fetch_allow)
        kw: dict[str, Any] = {
            "api_key": env[KEY_VARS[name]],
            "client": self.client,
            "timeout_s": timeout_s,
            "base_url": (env.get(BASE_VARS[name]) or DEFAULT_BASES[name]).rstrip("/"),
        }
        if name == "jina":
            return JinaReader(**kw)
        table = {
            ("search", "serper"): SerperSearch,
            ("search", "serpapi"): SerpAPISearch,
            ("scholar", "serper"): SerperScholar,
            ("scholar", "serpapi"): SerpAPIScholar,
        }
        return table[(tool, name)](**kw)

    def close(self) -> None:
        super().close()
        self.client.close()
