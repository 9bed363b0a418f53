"""The one interface every policy implements: a batch of turn requests in, one turn each out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, get_args, runtime_checkable

from agent.rollout.react import ChatFormat, Generation, TurnRequest

#: What a local model's weights decode in (`SamplingConfig.decode_dtype`). bfloat16 halves the
#: bytes each decoding step reads (the weights and the KV cache): greedy evals 1.7x faster on a
#: CPU with AVX-512 BF16 (docs/learning-log.md, session 57), slower on a CPU without native
#: bf16; its rows may differ from float32's.
DecodeDtype = Literal["float32", "bfloat16"]
DECODE_DTYPES: tuple[str, ...] = get_args(DecodeDtype)


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
