"""One HTTP call to a provider, with its failures sorted into retryable and not.

Why here: every provider (Serper, SerpAPI, Jina, a direct fetch, `wikisim serve`) fails the
same few ways, and the executor decides on retries by the error's class alone. Messages stay
short and free of URLs (ports, keys) so that a degraded observation is stable.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx

from wikisim.backends.executor import TransientBackendError
from wikisim.errors import BackendError


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds, from either of its forms (seconds, or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def send(
    client: httpx.Client, method: str, url: str, *, timeout_s: float, **kwargs: Any
) -> httpx.Response:
    """The response of a 2xx or a non-retryable 4xx; raises `TransientBackendError` for the rest."""
    try:
        response = client.request(method, url, timeout=timeout_s, **kwargs)
    except httpx.TimeoutException as e:
        raise TransientBackendError(f"timeout after {timeout_s}s") from e
    except httpx.TransportError as e:  # refused, reset, or a body cut short
        raise TransientBackendError(f"connection error ({type(e).__name__})") from e
    status = response.status_code
    if status == 429:
        raise TransientBackendError(
            "HTTP 429", retry_after=parse_retry_after(response.headers.get("retry-after"))
        )
    if status >= 500:
        raise TransientBackendError(f"HTTP {status}")
    return response


def json_body(response: httpx.Response) -> Any:
    """The JSON of a response; a 4xx (not 429) is a permanent `BackendError` with its message."""
    if response.status_code >= 400:
        raise BackendError(f"HTTP {response.status_code}: {_message(response)}")
    try:
        return response.json()
    except ValueError as e:  # malformed or truncated JSON: often a proxy hiccup, so retry
        raise TransientBackendError("malformed JSON") from e


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            if isinstance(data.get(key), str):
                return data[key][:200]
    return str(data)[:200]


def expect(data: Any, key: str, kind: type) -> Any:
    """`data[key]` when data is a dict holding a `kind` there; a missing key counts as empty."""
    if not isinstance(data, dict):
        raise TransientBackendError(f"unexpected JSON: {type(data).__name__} instead of an object")
    value = data.get(key, kind())
    if not isinstance(value, kind):
        raise TransientBackendError(f"unexpected JSON: {key!r} is a {type(value).__name__}")
    return value
