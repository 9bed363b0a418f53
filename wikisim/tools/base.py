"""The contract of a tool: a name, an OpenAI-style schema, and a call that never raises into the env loop."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Tool(Protocol):
    """A name, an OpenAI-style function schema, and a call that returns observation text.

    A bad call returns text that says what was wrong; it never raises into the env loop.
    """

    name: str
    schema: dict[str, Any]

    def __call__(self, **arguments: Any) -> str: ...
