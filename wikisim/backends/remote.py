"""RemoteBackend: the client of `wikisim serve`, behind the tool executor.

Why: env workers on many machines share one loaded index. The client is an httpx session
(keep-alive); each call goes through the executor, so retries with backoff, the breaker and
degradation apply as for the web. Answers are the server's JSON form decoded back to the same
records, so a remote run equals an in-process one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from wikisim.backends.base import Backend, PageView, ScholarHit
from wikisim.backends.cache import CacheMode, decode, open_cache
from wikisim.backends.executor import Executor, ExecutorConfig, ToolPolicy, TransientBackendError
from wikisim.backends.web.http import json_body, send
from wikisim.errors import BackendError, ConfigError
from wikisim.index.base import Hit

REMOTE_POLICY = ToolPolicy(timeout_s=30.0, max_attempts=4, backoff_base_s=0.1, backoff_max_s=2.0)


class _Client:
    """One attempt per call; 400/413 mean the call itself was wrong (ConfigError, as in-process)."""

    name = "remote"

    def __init__(self, url: str, client: httpx.Client, config: ExecutorConfig):
        self.url, self.client, self.config = url, client, config
        self.manifest_hash = ""

    def health(self) -> dict[str, Any]:
        try:
            data = json_body(
                send(
                    self.client, "GET", f"{self.url}/health", timeout_s=self.config.search.timeout_s
                )
            )
        except BackendError as e:
            raise BackendError(
                f"cannot reach wikisim serve at {self.url} ({e}); start one with "
                "`wikisim serve --index DIR` or pass the right url="
            ) from e
        if not isinstance(data, dict) or data.get("status") != "ok":
            raise BackendError(
                f"{self.url}/health did not answer like wikisim serve: {str(data)[:200]}"
            )
        return data

    def _post(self, tool: str, payload: dict[str, Any]) -> Any:
        response = send(
            self.client,
            "POST",
            f"{self.url}/{tool}",
            json=payload,
            timeout_s=self.config.policy(tool).timeout_s,
        )
        if response.status_code in (400, 413):
            try:
                why = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                why = response.text[:200]
            raise ConfigError(f"wikisim serve refused the {tool} call: {why}")
        data = json_body(response)
        if not isinstance(data, dict):
            raise TransientBackendError("unexpected JSON from wikisim serve")
        return data

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        data = self._post("search", {"queries": list(queries), "k": k})
        return [decode("search", hits) for hits in data["results"]]

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]:
        data = self._post("scholar", {"queries": list(queries), "k": k})
        return [decode("scholar", hits) for hits in data["results"]]

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView:
        return decode(
            "visit",
            self._post("visit", {"url": url, "goal": goal, "max_tokens": max_tokens})["page"],
        )


class RemoteBackend(Executor):
    """`RemoteBackend(url="http://127.0.0.1:8765")`: a `wikisim serve` instance as a Backend.

    Args:
        url: the server's base URL.
        config: executor policies (default: 30 s timeouts, 4 tries, short backoff).
        fallback: a backend tried when the server fails for good (e.g. a local WikiBackend).
        cache_path / cache_mode: an optional tool cache (default off: the server is deterministic;
            default path `cache_dir()/remote-cache.sqlite`).
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8765",
        *,
        config: ExecutorConfig | None = None,
        fallback: Backend | None = None,
        cache_path: str | Path | None = None,
        cache_mode: CacheMode = "off",
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"url must be an http(s) URL of a wikisim serve instance, got {url!r}"
            )
        config = config or ExecutorConfig(
            search=REMOTE_POLICY, visit=REMOTE_POLICY, scholar=REMOTE_POLICY
        )
        self.url = url.rstrip("/")
        self.client = httpx.Client(
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64)
        )
        remote = _Client(self.url, self.client, config)
        try:
            self.server_info = remote.health()
        except BaseException:
            self.client.close()
            raise
        remote.manifest_hash = str(self.server_info.get("manifest_hash", ""))
        chain = (remote,) if fallback is None else (remote, fallback)
        super().__init__(
            dict.fromkeys(("search", "visit", "scholar"), chain),
            config=config,
            cache=open_cache(cache_mode, cache_path, "remote"),
            name="remote",
            sleep=sleep,
        )

    def close(self) -> None:
        super().close()
        self.client.close()
