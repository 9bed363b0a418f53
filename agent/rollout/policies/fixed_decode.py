"""Decoding in fixed-shape buffers, each step replayed as one CUDA graph on a GPU.

On a GPU a small model's decode step is bound by launches, not arithmetic: SmolLM2-135M's
step is ~900 kernels and tens of ms of Python for ~1 ms of work, so session 13's GRPO spent
20-38 s of each H100 step generating 64 rollouts (and 4 s training). A CUDA graph replays a
whole step in one launch, but only over fixed shapes at fixed addresses. So here a turn's rows
stay in the batch until the turn ends (a finished row is computed and ignored), the rows are
rounded up to a power of two, and the keys and values live in preallocated buffers whose
attended width is rounded up to a multiple of `COLUMNS`: one graph per (rows, width), captured
the first time that shape is met, checked once against the eager step, and dropped with the
buffers when a larger turn needs them reallocated.

Without CUDA the same fixed-shape step runs eagerly (`FixedDecode(capture=False)`), which is
how the tests check that it samples exactly what the growing-cache path samples.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from agent.rollout.policies.kv import Past, layer_kv, row_past

COLUMNS = 256  # attended widths are multiples of this: few graphs, little masked work


class _ColumnLayer(DynamicLayer):
    """A layer cache over fixed buffers: each step writes at the shared column tensor."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, column: torch.Tensor) -> None:
        super().__init__()
        self._k, self._v, self._column = keys, values, column
        self.keys, self.values = keys, values
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        # in the buffers' dtype: under autocast (GRPO's model, prepared by Accelerate for bf16)
        # the step's keys are bf16 while the prefilled past is fp32, and `index_copy_` won't cast
        # (the growing cache's slice assignment does)
        self._k.index_copy_(2, self._column, key_states.to(self._k.dtype))
        self._v.index_copy_(2, self._column, value_states.to(self._v.dtype))
        return self._k, self._v


class FixedDecode:
    """Fixed-shape decoding state for one policy: key/value, mask, id and position buffers.

    `load` copies a prefilled batch into the buffers; each `step` feeds one id per row and
    returns the next logits. Buffers grow (and graphs are dropped) only when a turn needs more
    rows or columns than any before it.
    """

    def __init__(self, model: Any, *, capture: bool) -> None:
        self.model = model
        self.capture = capture
        self.fallback: str | None = None  # why graphs were turned off, if they were
        self.replays = 0  # steps run as a graph (read by benchmarks)
        self._keys: list[torch.Tensor] = []
        self._values: list[torch.Tensor] = []
        self._graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._pool: Any = None
        self.rows = self.width = 0

    def release(self) -> None:
        """Free the buffers and graphs (a batch that ran out of memory retries smaller).

        The graphs' memory pool goes with them: once no graph holds a pool, capturing into it
        again fails an internal assert of PyTorch's allocator (`use_count > 0`, seen on an H200
        when a longer turn reallocated the buffers), so the next capture starts a new one.
        """
        self._keys, self._values, self._graphs, self._pool = [], [], {}, None
        self.rows = self.width = 0

    def load(
        self, cache: Cache, mask: torch.Tensor, last_position: torch.Tensor, room: int
    ) -> None:
        """Take a prefilled batch: `cache` [n, heads, w, dim] per layer, `mask` [n, w], each row's
        last position [n, 1]; `room` new tokens follow."""
        n, w = mask.shape
        rows, width = 1 << (n - 1).bit_length(), -(-(w + room) // COLUMNS) * COLUMNS
        layers = [layer_kv(layer) for layer in cache.layers]
        self._allocate(layers[0][0], len(layers), rows, width)
        self.rows, self.width = rows, width
        for (k, v), kb, vb in zip(layers, self._keys, self._values, strict=True):
            kb[:n, :, :w], vb[:n, :, :w] = k, v
        self._mask[: self.rows].zero_()
        self._mask[:n, 0, 0, :w] = mask.to(torch.bool)
        self._mask[n : self.rows, 0, 0, 0] = True  # filler rows attend to one zero column, not none
        self._positions[: self.rows].zero_()
        self._positions[:n] = last_position
        self._ids[: self.rows].zero_()
        self._column.fill_(w)

    def step(self, ids: torch.Tensor) -> torch.Tensor:
        """Feed `ids` [n] (one per loaded row) at the next column; the logits [rows, vocab] that follow.

        Row i of the result is loaded row i; rows past n are filler.
        """
        n = ids.shape[0]
        self._ids[:n, 0] = ids
        self._mask[: self.rows].index_fill_(3, self._column, True)
        self._positions[: self.rows] += 1
        graph = self._graph()
        if graph is None:
            logits = self._forward()
        else:
            graph[0].replay()
            logits = graph[1]
            self.replays += 1
        self._column += 1
        return logits

    def row_past(self, row: int) -> Past:
        """Row `row`'s keys and values at its attended columns so far, copied out."""
        columns = self._mask[row, 0, 0, : int(self._column)].nonzero()[:, 0]
        return row_past(zip(self._keys, self._values, strict=True), row, columns)

    def _allocate(self, ref: torch.Tensor, layers: int, rows: int, width: int) -> None:
        """Buffers for at least `rows` x `width` (and for every turn before: they only grow)."""
        have = self._keys[0].shape if self._keys else None
        if have is not None and have[0] >= rows and have[2] >= width:
            return
        rows, width = max(rows, have[0] if have else 0), max(width, have[2] if have else 0)
        self.release()
        shape = (rows, ref.shape[1], width, ref.shape[-1])
        self._keys = [ref.new_zeros(shape) for _ in range(layers)]
        self._values = [ref.new_zeros(shape) for _ in range(layers)]
        self._mask = torch.zeros((rows, 1, 1, width), dtype=torch.bool, device=ref.device)
        self._positions = torch.zeros((rows, 1), dtype=torch.long, device=ref.device)
        self._ids = torch.zeros((rows, 1), dtype=torch.long, device=ref.device)
        self._column = torch.zeros((1,), dtype=torch.long, device=ref.device)

    def _forward(self) -> torch.Tensor:
        r, w = self.rows, self.width
        cache = Cache(
            layers=[
                _ColumnLayer(k[:r, :, :w], v[:r, :, :w], self._column)
                for k, v in zip(self._keys, self._values, strict=True)
            ]
        )
        out = self.model(
            input_ids=self._ids[:r],
            attention_mask=self._mask[:r, :, :, :w],
            position_ids=self._positions[:r],
            cache=cache,
            use_cache=True,
        )
        return out.logits[:, -1, :].float()

    def _graph(self) -> tuple[torch.cuda.CUDAGraph, torch.Tensor] | None:
        """The graph of this (rows, width), captured and checked on first use; None without graphs."""
        if not self.capture:
            return None
        key = (self.rows, self.width)
        if key in self._graphs:
            return self._graphs[key]
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up (kernels chosen, workspaces allocated)
                for _ in range(2):
                    self._forward()
            torch.cuda.current_stream().wait_stream(side)
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                logits = self._forward()
            graph.replay()
            eager = self._forward()  # the same column again: the same keys and values
            diff = float((logits - eager).abs().max())
            if not diff <= 1e-4:  # the same kernels: equal, or a capture gone wrong
                raise RuntimeError(f"the graph's logits differ from the eager step's by {diff:.3g}")
        except torch.OutOfMemoryError:  # the caller retries a smaller batch, graphs still on
            raise
        except Exception as e:  # any other failure costs speed only: the eager step is exact
            self.capture = False
            self.fallback = f"{type(e).__name__}: {e}"
            warnings.warn(
                f"CUDA graphs off for this policy, decoding eagerly: {self.fallback}", stacklevel=2
            )
            return None
        self._graphs[key] = (graph, logits)
        return self._graphs[key]
