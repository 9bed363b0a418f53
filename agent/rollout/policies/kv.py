"""KV caches for batched decoding on CPU: per-row pasts, written in place, kept across turns.

A ReAct episode's next context is its last context plus the turn it generated plus the tool
response, so the keys and values of everything before the tool response are already known.
`KVStore` keeps, per episode, the cache of the context it last saw (pads dropped: rotary
positions are baked into the keys, so a row's real columns are all it needs), and
`batch_cache` lays several rows' pasts side by side, left-padded, under one attention mask.
`BufferedLayer` appends each new token into a preallocated buffer instead of concatenating
(DynamicLayer copies the whole cache for every generated token).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import torch
from transformers.cache_utils import Cache, DynamicLayer

if TYPE_CHECKING:  # the layer kinds transformers' Cache is typed with
    from transformers.cache_utils import CacheLayerMixin, DummyLayer, LinearAttentionCacheLayerMixin

Past = tuple[
    tuple[torch.Tensor, torch.Tensor], ...
]  # per layer (keys, values), [kv_heads, length, head_dim]


class BufferedLayer(DynamicLayer):
    """A layer cache with room for `room` more tokens, filled in place."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
        super().__init__()
        n, heads, length, dim = keys.shape
        self._k = keys.new_empty((n, heads, length + room, dim))
        self._v = values.new_empty((n, heads, length + room, dim))
        self._k[:, :, :length], self._v[:, :, :length] = keys, values
        self._len = length
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self._view()

    def _view(self) -> None:
        self.keys, self.values = self._k[:, :, : self._len], self._v[:, :, : self._len]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        end = self._len + key_states.shape[-2]
        if end > self._k.shape[-2]:  # out of room: grow by doubling (amortised O(1) per token)
            grow = max(end, 2 * self._k.shape[-2]) - self._k.shape[-2]
            self._k = torch.cat(
                [self._k, self._k.new_empty((*self._k.shape[:2], grow, self._k.shape[-1]))], dim=-2
            )
            self._v = torch.cat(
                [self._v, self._v.new_empty((*self._v.shape[:2], grow, self._v.shape[-1]))], dim=-2
            )
        self._k[:, :, self._len : end], self._v[:, :, self._len : end] = key_states, value_states
        self._len = end
        self._view()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._k, self._v = self._k[indices], self._v[indices]
        self._view()


def batch_cache(pasts: Sequence[Past | None], room: int) -> tuple[Cache | None, torch.Tensor]:
    """One cache holding every row's past, left-padded to the longest; and its [rows, width] mask.

    Rows without a past get only padding. Returns (None, an empty mask) when no row has one.
    """
    width = max((p[0][0].shape[-2] for p in pasts if p), default=0)
    mask = torch.zeros((len(pasts), width), dtype=torch.long)
    if width == 0:
        return None, mask
    ref = next(p for p in pasts if p)[0][0]
    layers: list[CacheLayerMixin | LinearAttentionCacheLayerMixin | DummyLayer] = []
    for layer in range(len(next(p for p in pasts if p))):
        k = ref.new_zeros((len(pasts), ref.shape[0], width, ref.shape[-1]))
        v = torch.zeros_like(k)
        for i, p in enumerate(pasts):
            if p:
                length = p[layer][0].shape[-2]
                k[i, :, width - length :], v[i, :, width - length :] = p[layer]
        layers.append(BufferedLayer(k, v, room))
    for i, p in enumerate(pasts):
        if p:
            mask[i, width - p[0][0].shape[-2] :] = 1
    return Cache(layers=layers), mask


def buffered(cache: Cache, room: int) -> Cache:
    """The same keys and values in `BufferedLayer`s with `room` more tokens each."""
    return Cache(layers=[BufferedLayer(*layer_kv(layer), room) for layer in cache.layers])


def row_past(
    layers: Iterable[tuple[torch.Tensor, torch.Tensor]], row: int, columns: torch.Tensor
) -> Past:
    """Row `row`'s keys and values at the given columns (its real tokens), copied out of a batch's
    per-layer (keys, values)."""
    return tuple((k[row][:, columns].clone(), v[row][:, columns].clone()) for k, v in layers)


def layer_kv(layer: object) -> tuple[torch.Tensor, torch.Tensor]:
    """A filled attention layer's keys and values (transformers types a cache's layers as a union of
    kinds, some without keys, and the keys as optional until the first update)."""
    keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
    if keys is None or values is None:
        raise TypeError(
            f"{type(layer).__name__} holds no keys and values: the KV store needs attention layers"
        )
    return keys, values


class KVStore:
    """Pasts of the contexts a policy generated from in its last `act` call, found by longest prefix.

    `act` brackets its calls with `mark()` and `sweep()`: a call takes (removes) the pasts
    that its contexts extend from those the previous call left, and what it does not take
    belongs to finished episodes and is dropped. So memory stays at one context per live
    episode, and no result depends on calls older than the previous one. Equal contexts
    (samples of one task that agree so far) keep one past each.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[int, ...], list[Past]] = {}
        self._now: dict[tuple[int, ...], list[Past]] = {}

    def __len__(self) -> int:
        return sum(map(len, self._last.values())) + sum(map(len, self._now.values()))

    def mark(self) -> None:
        self._last, self._now = self._now, {}

    def sweep(self) -> None:
        self._last = {}

    def put(self, ids: Sequence[int], past: Past) -> None:
        self._now.setdefault(tuple(ids), []).append(past)

    def restore(self, ids: Sequence[int], past: Past) -> None:
        """Give back a past that a failed call took, for the call that retries it."""
        self._last.setdefault(tuple(ids), []).append(past)

    def take(self, context: Sequence[int]) -> tuple[int, Past | None]:
        """The longest stored proper prefix of `context`: (its length, its past), removed from the store."""
        best: tuple[int, ...] = ()
        for key in self._last:
            if len(best) < len(key) < len(context) and tuple(context[: len(key)]) == key:
                best = key
        if not best:
            return 0, None
        pasts = self._last[best]
        past = pasts.pop()
        if not pasts:
            del self._last[best]
        return len(best), past
