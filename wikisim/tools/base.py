"""The contract of a tool: a name, an OpenAI-style schema, and a call that returns a typed result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolOutput:
    """What a tool call gives: the observation text, and whether the call did what was asked.

    `ok=False` marks a call the tool could not carry out (a backend failure, a sandbox that
    cannot start, a program over the size limit); its text says why and is shown to the policy.
    """

    text: str
    ok: bool = True


@runtime_checkable
class Tool(Protocol):
    """A name, an OpenAI-style function schema, and a call over arguments that fit the schema.

    Arguments are checked against the schema once, before the call (`ToolBox.call` or the turn
    parser), so a tool never re-checks them; a failure is an `ok=False` output, never an exception.
    """

    name: str
    schema: dict[str, Any]

    def __call__(self, **arguments: Any) -> ToolOutput: ...
