"""Cost of one GRPO (or SFT) update of SmolLM2 + LoRA on CPU: the lm_head at the policy's tokens vs everywhere.

The update (`agent.train.grpo.grpo_update`) runs the lm_head, log-softmax and entropy only at
the positions the loss mask keeps (`agent.train.losses.kept_positions`). "full" runs the same
code with every scored position kept, which is the cost the trainer had before: logits,
log-softmax and entropy over the whole ~2k-token episode and SmolLM2's 49k-token vocabulary.
Both variants run in this process on the same trajectories (the shipped adapter, seeded token
ids shaped like compact-context episodes: a 200-token prompt, then 2, 3 or 4 turns of 80 policy
tokens and 120 observation tokens, so 600-1,000 tokens and a micro-batch pads its shorter
sequences, as real ones do; the held-out episodes of the SFT adapter average ~670 tokens); the
loss and gradient norm the variants report must agree.

`--precisions no,bf16` also times the kept update at the first micro-batch size under each
precision (`GRPOConfig.mixed_precision`: Accelerate's autocast, which on a CPU with AVX-512 BF16
runs the matmuls in bf16; the trainer's "auto" is fp32 on any CPU), with the loss and gradient
norm each gives.

`--trainer sft` times one SFT step instead (`agent.train.sft.sft_loss` over the micro-batches,
then the optimizer), which keeps the same positions (the policy's tokens) since it too stopped
running the lm_head everywhere.

Peak memory is the process's resident set sampled every 5 ms during the update, less the resident
set just before it.

    nice -n 10 .venv/bin/python bench/grpo_step.py [--trainer sft] [--sequences 6] [--micro-batches 1,2,4]
    .venv/bin/python bench/grpo_step.py --micro-batches 1 --precisions no,bf16
Writes bench/results/{grpo,sft}_step.json; prints one line per variant and, last, a JSON summary.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
import torch  # noqa: E402

import agent.train.grpo as grpo  # noqa: E402
import agent.train.sft as sft  # noqa: E402
from agent.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agent.train.config import GRPOConfig, Precision, SFTConfig  # noqa: E402
from agent.train.loop import (  # noqa: E402
    collate,
    load_model,
    make_accelerator,
    make_optimizer,
    micro_batches,
)

RESULTS = Path(__file__).resolve().parent / "results"
PROMPT, POLICY, OBSERVATION = 200, 80, 120


def episodes(n: int, vocab: int, seed: int) -> list[Trajectory]:
    """n seeded episodes of 2-4 turns, rewards alternating 1 and 0 (every advantage nonzero)."""
    g = torch.Generator().manual_seed(seed)

    def ids(k: int) -> tuple[int, ...]:
        return tuple(torch.randint(vocab, (k,), generator=g).tolist())

    return [
        Trajectory(
            task_id=f"q{i // 2}",
            seed=i,
            policy="bench",
            prompt_ids=ids(PROMPT),
            turns=tuple(
                Turn(
                    text="",
                    ids=ids(POLICY),
                    logprobs=(0.0,) * POLICY,
                    observation_ids=ids(OBSERVATION),
                )
                for _ in range(2 + i % 3)
            ),
            answer="a",
            reward=float(i % 2),
            terminated=True,
            truncated=False,
            manifest_hash="bench",
            version="0",
        )
        for i in range(n)
    ]


def every_position(mask: torch.Tensor) -> torch.Tensor:
    """The cost before: every position that scores a next token goes through the lm_head."""
    return torch.nn.functional.pad(torch.ones_like(mask, dtype=torch.bool), (0, 1))


class PeakRSS:
    """Highest resident set above the starting one, sampled by a thread while the block runs."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.005)

    def __enter__(self) -> PeakRSS:
        self.start = self.proc.memory_info().rss
        self.peak = self.start
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def above_start_gb(self) -> float:
        return (self.peak - self.start) / 1e9


def _timed(cfg: GRPOConfig | SFTConfig, init: str, run: Callable[..., dict[str, float]]) -> dict:
    """`run(model, opt, sched, acc, pad_id)` from the shipped adapter with fresh weights and
    optimizer, timed and its peak memory sampled; its row."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)  # one process, several precisions
    acc = make_accelerator(cfg)
    tok, model = load_model(cfg, init)
    opt, sched = make_optimizer(cfg, model, 1)
    model, opt, sched = acc.prepare(model, opt, sched)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        out = run(model, opt, sched, acc, tok.pad_token_id)
        wall = time.perf_counter() - t0
    del model, opt, sched, acc
    gc.collect()
    return {
        "micro_batch": cfg.micro_batch_size,
        "time_s": wall,
        "peak_rss_gb": mem.above_start_gb,
        **out,
    }


def update(
    args: argparse.Namespace, micro: int, trajs: list[Trajectory], precision: Precision = "no"
) -> dict[str, float]:
    """One GRPO update (`agent.train.grpo.grpo_update`) under `precision`."""
    cfg = GRPOConfig(
        mixed_precision=precision,
        output_dir=str(RESULTS / "grpo_step_run"),
        model="smollm2",
        init_checkpoint=args.init,
        lora_rank=8,
        lora_alpha=16,
        group_size=2,
        micro_batch_size=micro,
        cpu=True,
    )

    def run(model, opt, sched, acc, pad_id: int) -> dict[str, float]:
        out = grpo.grpo_update(model, opt, sched, acc, trajs, cfg, pad_id)
        return {k: out[k] for k in ("loss", "grad_norm", "entropy")}

    return _timed(cfg, args.init, run)


def sft_update(args: argparse.Namespace, micro: int, trajs: list[Trajectory]) -> dict[str, float]:
    """One SFT step: `agent.train.sft.sft_loss` over the micro-batches, then the optimizer."""
    cfg = SFTConfig(
        output_dir=str(RESULTS / "sft_step_run"),
        model="smollm2",
        lora_rank=8,
        lora_alpha=16,
        micro_batch_size=micro,
        cpu=True,
    )

    def run(model, opt, sched, acc, pad_id: int) -> dict[str, float]:
        batch = collate(trajs, pad_id)
        n_tokens, loss = float(batch.loss_mask.sum()), 0.0
        for mb in micro_batches(len(trajs), micro):
            part = sft.sft_loss(model, batch, mb, n_tokens)
            acc.backward(part)
            loss += part.item()
        norm = float(acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
        opt.step()
        return {"loss": loss, "grad_norm": norm}

    return _timed(cfg, args.init, run)


def precision_ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """fp32's time over each other precision's, and how far its loss and gradient norm moved,
    on the kept update at the same micro-batch size."""
    out: dict[str, float] = {}
    for r in rows:
        if not r["variant"].startswith("kept "):
            continue
        base = next(
            b for b in rows if b["variant"] == "kept" and b["micro_batch"] == r["micro_batch"]
        )
        q = r["variant"].split()[1]
        out[f"time_ratio_fp32_over_{q}"] = base["time_s"] / r["time_s"]
        out[f"loss_abs_diff_{q}"] = abs(base["loss"] - r["loss"])
        out[f"grad_norm_rel_diff_{q}"] = abs(base["grad_norm"] - r["grad_norm"]) / base["grad_norm"]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trainer", choices=("grpo", "sft"), default="grpo")
    p.add_argument("--init", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--sequences", type=int, default=6)
    p.add_argument("--micro-batches", default="1,2,4", help="micro-batch sizes of the kept variant")
    p.add_argument("--full-micro-batch", type=int, default=1)
    p.add_argument(
        "--precisions",
        default="no",
        help="GRPO only: precisions to time the kept update under, at the first micro-batch size "
        "(no,bf16: fp32 against bf16 autocast)",
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    trajs = episodes(args.sequences, 49152, args.seed)
    module: Any = grpo if args.trainer == "grpo" else sft  # the one whose kept_positions is swapped
    step = update if args.trainer == "grpo" else sft_update
    kept = module.kept_positions
    rows: list[dict[str, Any]] = []
    try:
        module.kept_positions = every_position
        rows.append({"variant": "full", **step(args, args.full_micro_batch, trajs)})
        print(rows[-1], flush=True)
    finally:
        module.kept_positions = kept
    for micro in (int(m) for m in args.micro_batches.split(",")):
        rows.append({"variant": "kept", **step(args, micro, trajs)})
        print(rows[-1], flush=True)
    if args.trainer == "grpo":
        micro = int(args.micro_batches.split(",")[0])
        for precision in (q for q in args.precisions.split(",") if q != "no"):
            rows.append({"variant": f"kept {precision}", **update(args, micro, trajs, precision)})
            print(rows[-1], flush=True)
    for r in rows:
        print(
            f"{r['variant']} micro-batch {r['micro_batch']}: {r['time_s']:.1f}s, "
            f"peak RSS +{r['peak_rss_gb']:.2f} GB, loss {r['loss']:.6f}, grad norm {r['grad_norm']:.6f}",
            flush=True,
        )
    base = rows[0]
    same = next(r for r in rows[1:] if r["micro_batch"] == base["micro_batch"])
    summary = {
        "sequences": args.sequences,
        "tokens_per_sequence": [len(t.token_ids()) for t in trajs],
        "policy_tokens_per_sequence": [sum(t.loss_mask()) for t in trajs],
        "rows": rows,
        "time_ratio_full_over_kept": base["time_s"] / same["time_s"],
        "peak_rss_ratio_full_over_kept": base["peak_rss_gb"] / max(same["peak_rss_gb"], 1e-9),
        "loss_abs_diff": abs(base["loss"] - same["loss"]),
        "grad_norm_rel_diff": abs(base["grad_norm"] - same["grad_norm"]) / base["grad_norm"],
        **precision_ratios(rows),
        "threads": args.threads,
        "load_avg_1min": os.getloadavg()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{args.trainer}_step.json"
    out.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))


if __name__ == "__main__":
    main()
