"""`wikisim build --engine ray`: parsing and dense encoding spread over a Ray cluster.

Ray rather than our own scheduler: it already places work on many machines, restarts
lost workers and moves the data. The build's output does not change with it: parsing
sends the same chunks of raw pages (`reader.CHUNK_PAGES`) as Ray tasks and takes their
results in submission order; dense encoding sends the same chunks of passages
(`dense.ENCODE_CHUNK`, the unit that fixes padding) to encoder actors, one per CPU slot
or GPU, and takes the vectors back in row order. An actor's torch runs on one thread,
the single-process build on all cores; the vectors are bit-identical either way (MKL
splits these products by rows, not along the sums: checked with 1, 2 and 4 threads), so
the same inputs give the same manifest hash on one machine or a cluster of CPU workers.
GPU vectors differ from CPU ones in their low bits: the manifest records the device.

Ray is an optional extra: `pip install wikisim[ray]` (`make install` installs it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from wikisim.errors import ConfigError


def connect(address: str | None = None, num_cpus: int | None = None) -> int:
    """Join the cluster at `address` (or start a local one of `num_cpus`); its CPU count."""
    try:
        import ray
    except ImportError as e:
        raise ConfigError("--engine ray needs Ray: pip install 'wikisim[ray]'") from e
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def cluster_device() -> str:
    """ "cuda" when the cluster has GPUs (encoders then take one each), else "cpu"."""
    import ray

    return "cuda" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"


class _Pending:
    def __init__(self, ref: Any) -> None:
        self._ref = ref

    def get(self) -> Any:
        import ray

        return ray.get(self._ref)


class RayPool:
    """The part of multiprocessing.Pool that `read_pages` uses, as Ray tasks (one CPU each)."""

    def __init__(self) -> None:
        self._remote: dict[Callable, Any] = {}

    def apply_async(self, fn: Callable, args: tuple) -> _Pending:
        import ray

        if fn not in self._remote:
            self._remote[fn] = ray.remote(num_cpus=1)(fn)
        return _Pending(self._remote[fn].remote(*args))

    def terminate(self) -> None:
        """Nothing to stop: unfinished tasks are dropped with their references."""


class _Encoder:
    """One model per actor; encodes a chunk exactly as the single-process build does."""

    def __init__(self, model_path: str, device: str, batch: int) -> None:
        from wikisim.index.dense import load_encoder

        self.model = load_encoder(model_path, device)
        self.batch = batch

    def encode(self, texts: list[str]) -> np.ndarray:
        from wikisim.index.dense import encode_chunk

        return encode_chunk(self.model, texts, self.batch)


def ray_encoder(
    model_path: str, device: str, batch: int
) -> Callable[[Iterator[list[str]]], Iterator[np.ndarray]]:
    """Chunks of texts -> their vectors, in order, over one actor per CPU slot (or per GPU)."""
    import ray

    gpu = device == "cuda"
    slots = int(ray.cluster_resources().get("GPU" if gpu else "CPU", 1)) or 1
    actor = ray.remote(num_gpus=1 if gpu else 0, num_cpus=0 if gpu else 1)(_Encoder)
    actors: list[Any] = [
        actor.remote(model_path, "cuda" if gpu else "cpu", batch) for _ in range(slots)
    ]

    def encode(chunks: Iterator[list[str]]) -> Iterator[np.ndarray]:
        pending: deque = deque()
        for i, texts in enumerate(chunks):
            pending.append(actors[i % len(actors)].encode.remote(texts))
            if len(pending) >= 2 * len(actors):
                yield ray.get(pending.popleft())
        while pending:
            yield ray.get(pending.popleft())

    return encode
