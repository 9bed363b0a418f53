"""The one interface every policy implements: a batch of turn requests in, one turn each out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agent.rollout.react import ChatFormat, Generation, TurnRequest


@runtime_checkable
class Policy(Protocol):
    """A policy acts for many episodes at once, so local models can batch and servers overlap.

    `chat` is the chat format whose tokenizer the trajectories' ids are in: a local model's
    own, or any tokenizer given to a text-only policy (None: text-only trajectories).
    """

    name: str

    @property
    def chat(self) -> ChatFormat | None: ...

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]: ...
