"""One forward and one backward pass over the prefix a GRPO group's rows share, not one per row.

The G rollouts of a question begin with the same tokens: the system prompt and the question, and
with teacher starts (`agent.train.starts`) the teacher's replayed turns as well. No position in
that prefix is scored (the loss masks prompt and forced turns), but every later token attends to
it, so its keys and values carry gradients. `PrefixPass` runs the prefix once, batch 1, and keeps
its keys and values; each micro-batch of the group's rows runs only its suffixes over a copy of
them, detached, whose gradients accumulate; after the group's last micro-batch one backward
sends those gradients through the prefix's own pass. The rows run at any micro-batch size (one at
a time is fastest on a CPU, where a micro-batch pads its rows), and the loss and gradients are
those of the rows run whole, up to float rounding (tests/agent/test_prefix.py). Sharing the
prefix's forward across a group is Prefix Grouper's idea (Liu et al., 2025, "Efficient GRPO
Training through Shared-Prefix Forward").
"""

from __future__ import annotations

from typing import Any

import torch

from agent.rollout.policies.kv import layer_kv
from agent.train.loop import Batch

MIN_PREFIX = 16  # a shorter shared prefix saves less than its extra pass costs
#: the least share of a group's tokens its prefix must hold to run once: past a cache, attention
#: needs an explicit mask (SDPA's masked kernel, not its causal one), which on 2 CPU cores cost
#: back all a 22% prefix saved (a scratch group: 0.91x) while a 90% one ran 3.2x faster
#: (a teacher-started group; bench/grpo_prefix.py)
MIN_SHARE = 0.5


def shared_prefix(batch: Batch, keep: torch.Tensor) -> int:
    """Leading columns in which every row holds the same real tokens and no position is kept
    (`keep`: (B, L) positions whose logits the loss needs); every row keeps a suffix of at
    least one token, and a single row shares with nobody (0)."""
    ids, att = batch.input_ids, batch.attention_mask
    if ids.shape[0] < 2:
        return 0
    same = ((ids == ids[:1]) & (att == 1)).all(0)
    lcp = int(same.long().cumprod(0).sum())
    kept = keep.any(0)
    first_kept = int(kept.long().argmax()) if bool(kept.any()) else ids.shape[1]
    shortest = int(att.sum(1).min())
    return max(0, min(lcp, first_kept, shortest - 1))


def worth_sharing(batch: Batch, length: int) -> bool:
    """Whether a `length`-token prefix is worth its own pass over `batch`'s rows."""
    return length >= MIN_PREFIX and length * batch.input_ids.shape[0] >= MIN_SHARE * float(
        batch.attention_mask.sum()
    )


class PrefixPass:
    """The first `length` tokens of `ids`, run once through `model`; with `grad`, their gradients
    wait on detached copies of their keys and values until `backward`."""

    def __init__(self, model: Any, ids: torch.Tensor, length: int, *, grad: bool) -> None:
        from transformers import DynamicCache

        self.length = length
        cache = DynamicCache()
        with torch.set_grad_enabled(grad):
            model(
                input_ids=ids[:1, :length],
                attention_mask=torch.ones_like(ids[:1, :length]),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        self._kv = [t for layer in cache.layers for t in layer_kv(layer)]
        self._copies = [t.detach().requires_grad_(grad) for t in self._kv]

    def logits(self, model: Any, rows: Batch, keep: torch.Tensor) -> torch.Tensor:
        """(N, V) logits at the N kept positions of `rows` (all of them after the prefix), as
        `logits_to_keep=keep` gives them over whole rows."""
        from transformers import DynamicCache

        n = rows.input_ids.shape[0]
        pairs = zip(self._copies[::2], self._copies[1::2], strict=True)
        cache = DynamicCache(
            ddp_cache_data=[(k.expand(n, -1, -1, -1), v.expand(n, -1, -1, -1)) for k, v in pairs]
        )
        return model(
            input_ids=rows.input_ids[:, self.length :],
            attention_mask=rows.attention_mask,
            cache=cache,
            use_cache=True,
            logits_to_keep=keep[:, self.length :],
        ).logits

    def backward(self) -> None:
        """The gradients the rows left on the prefix's keys and values, through the prefix's pass."""
        done = [
            (t, c.grad) for t, c in zip(self._kv, self._copies, strict=True) if c.grad is not None
        ]
        if done:
            torch.autograd.backward([t for t, _ in done], [g for _, g in done])
        self._kv, self._copies = [], []
