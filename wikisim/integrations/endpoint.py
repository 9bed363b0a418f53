"""What every route of `wikisim serve` shares: body decoding (JSON or msgpack), argument checks
that name the bad field, and the reply a route memoises.

Why one module: the native routes (/search, /visit, /scholar) and the compatible ones
(/retrieve, /access, /serper/..., /jina/...) validate the same way and answer through the
same memo and metrics, so a request is refused with the same kind of message on every route.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

MSGPACK_TYPES = ("application/msgpack", "application/x-msgpack", "application/vnd.msgpack")


class BadRequest(Exception):
    """A request the client must change: `status` is the 4xx code, the message says what to change."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Reply:
    """A finished answer: what is memoised and sent (status, media type, body bytes)."""

    status: int
    media_type: str
    body: bytes


@dataclass(frozen=True)
class Endpoint:
    """One route's contract: validated arguments from the decoded body, then the reply to them.

    `args` raises `BadRequest`; its result is the memo key, so it must hold every input of
    `answer` (`packed` is whether the client asked for msgpack).
    """

    name: str
    args: Callable[[Any], dict[str, Any]]
    answer: Callable[[dict[str, Any], bool], Reply]


def is_msgpack(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() in MSGPACK_TYPES


def wants_msgpack(headers: Mapping[str, str]) -> bool:
    """msgpack out when the client asks for it (Accept), or sent msgpack and did not ask for JSON."""
    accept = headers.get("accept", "").lower()
    if any(t in accept for t in MSGPACK_TYPES):
        return True
    return is_msgpack(headers.get("content-type", "")) and "json" not in accept


def decode_body(body: bytes, content_type: str) -> Any:
    """The request body as Python data: msgpack when the Content-Type says so, else JSON."""
    if is_msgpack(content_type):
        try:
            return msgpack.unpackb(body, raw=False, strict_map_key=True)
        except (ValueError, msgpack.UnpackException, TypeError) as e:
            raise BadRequest(
                400, f"body is not valid msgpack ({e}); send one msgpack map"
            ) from None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(400, f"body is not valid JSON ({e}); send a JSON object") from None


def dump(payload: Any, packed: bool, status: int = 200) -> Reply:
    """A JSON (compact, UTF-8) or msgpack reply."""
    if packed:
        return Reply(status, "application/msgpack", msgpack.packb(payload, use_bin_type=True))
    return Reply(
        status,
        "application/json",
        json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
    )


def as_object(data: Any, what: str = "body") -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadRequest(
            400, f"{what} must be a JSON object (or msgpack map), got {type(data).__name__}"
        )
    return data


def integer(
    data: Mapping[str, Any], keys: tuple[str, ...], default: int, most: int, least: int = 1
) -> int:
    """The first of `keys` present (aliases, e.g. topk / top_k / k), checked to lie in [least, most]."""
    key = next((k for k in keys if k in data and data[k] is not None), keys[0])
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
        raise BadRequest(
            400, f"{key!r} must be an integer from {least} to {most}, got {value!r}"[:300]
        )
    return value


def strings(value: Any, field: str, most: int, max_chars: int, noun: str = "query") -> list[str]:
    """A non-empty list of non-blank strings (a single string counts as a list of one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise BadRequest(400, f"{field!r} must be a non-empty list of strings, got {value!r}"[:300])
    if len(value) > most:
        raise BadRequest(
            400, f"{len(value)} items in {field!r} in one request; the limit is {most}"
        )
    for i, s in enumerate(value):
        if not isinstance(s, str) or not s.strip():
            raise BadRequest(400, f"{noun} {i} of {field!r} is empty or not a string: {s!r}"[:300])
        if len(s) > max_chars:
            raise BadRequest(
                400, f"{noun} {i} of {field!r} has {len(s)} characters; the limit is {max_chars}"
            )
    return value
