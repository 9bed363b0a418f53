"""A minimal client for any OpenAI-compatible chat-completions server, with an on-disk cache.

Used by the LLM visit summariser and the LLM answer judge. Temperature 0 and a cache keyed
by the exact request make repeated episodes give the same text without asking again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from wikisim.errors import BackendError, ConfigError
from wikisim.paths import cache_dir


@dataclass(frozen=True)
class ChatConfig:
    base_url: str  # e.g. "http://127.0.0.1:8000/v1"
    model: str
    api_key: str = "EMPTY"
    max_tokens: int = 1024
    timeout_s: float = 120.0
    retries: int = 3

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must start with http:// or https://, got {self.base_url!r}"
            )
        if not self.model:
            raise ConfigError("model must name the served model, got an empty string")
        if self.max_tokens < 1 or self.retries < 1:
            raise ConfigError(
                f"max_tokens and retries must be >= 1, got {self.max_tokens} and {self.retries}"
            )


class ChatClient:
    """`complete(messages)` -> the first choice's text; cached under `cache_dir()/llm`."""

    def __init__(self, config: ChatConfig, cache: Path | None = None) -> None:
        self.config = config
        self.cache = Path(cache) if cache else cache_dir() / "llm"
        self._http = httpx.Client(timeout=config.timeout_s)

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": self.config.model,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": self.config.max_tokens,
            "seed": 0,
        }

    def _path(self, payload: dict[str, Any]) -> Path:
        key = hashlib.sha256(
            json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        return self.cache / key[:2] / f"{key}.json"

    def complete(self, messages: list[dict[str, str]]) -> str:
        payload = self._payload(messages)
        path = self._path(payload)
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))["content"]
        content = self._post(payload)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"content": content}, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: workers sharing the cache never read half a file
        return content

    def _post(self, payload: dict[str, Any]) -> str:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.config.api_key}"}

        @retry(
            stop=stop_after_attempt(self.config.retries),
            wait=wait_exponential(min=0.1, max=5),
            retry=retry_if_exception_type(httpx.TransportError),
            reraise=True,
        )
        def post() -> httpx.Response:
            return self._http.post(url, json=payload, headers=headers)

        try:
            response = post()
            response.raise_for_status()
            return response.json()["choices"][0]["message"]["content"] or ""
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
            raise BackendError(
                f"chat completion from {url} (model {self.config.model!r}) failed: {e}; "
                "check that the server is up and serves that model"
            ) from e
