"""Decoding speed of the local-model policy: per-row sampling (a Python loop), sampling on the
host, batched tensor ops on the model's device, and fixed-shape decoding (CUDA graphs on a GPU).

    nice -n 10 .venv/bin/python bench/decode.py [--policy data/models/smollm2-wikisim-lora] [--tasks 16]
    python bench/decode.py --device cuda --threads 16 --tasks 36 --batch 36 --index sample-qa

All run in this process on the same first turns (the bundled questions under the env's compact
system prompt), the same model and seeds, at temperature 1: the loop that sampled each row with
its own `torch.multinomial` (what `TransformersPolicy` did first), the batched sampler fed logits
copied to the host (what it did until the arithmetic moved to the model's device; the same as the
policy on a CPU), the policy with its growing cache ("batched") and in fixed-shape buffers
("fixed": each step one CUDA graph on a GPU, the policy's default there), and the batched
policy under bf16 autocast ("bf16": GRPO's sampler under `mixed_precision: bf16`), alternated
`--repeats` times so that a shared machine's load falls on all alike; each one's best (least
loaded) repeat is reported. The sampling step alone (one batch of logits to ids) is timed too. Prints tokens/s of each and the policy's ratio
to each baseline, the fixed path's ratio to the batched one and the share of rows whose ids the
two agree on (the same seeds; floating-point noise can part them); writes
bench/results/decode[_DEVICE].json (decode.json on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from agent.rollout.episodes import make_envs  # noqa: E402
from agent.rollout.policies.transformers_policy import (  # noqa: E402
    Sampled,
    SamplingConfig,
    TransformersPolicy,
)
from agent.rollout.react import Budget, Episode, Generation, TurnRequest  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


class RowLoopPolicy(TransformersPolicy):
    """The policy with the per-row sampler it had before: one softmax and multinomial per row."""

    def _sample(
        self, logits: torch.Tensor, gens: Sequence[torch.Generator]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.sampling.temperature
        toks, lps = [], []
        for row, gen in zip(logits, gens, strict=True):  # the generators are the host's
            logp = torch.log_softmax(row.cpu() / t, -1)
            tok = int(torch.multinomial(logp.exp(), 1, generator=gen))
            toks.append(tok)
            lps.append(float(logp[tok]))
        return torch.tensor(toks, device=logits.device), torch.tensor(lps, device=logits.device)


class HostSamplingPolicy(TransformersPolicy):
    """The policy as it was before sampling moved to the model's device: logits copied to the host."""

    def _sample(
        self, logits: torch.Tensor, gens: Sequence[torch.Generator]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        tok, lp = super()._sample(logits.cpu(), gens)
        return tok.to(logits.device), lp


class AutocastPolicy(TransformersPolicy):
    """The batched policy with every forward under bf16 autocast: how GRPO's sampler runs under
    `mixed_precision: bf16` (Accelerate wraps the prepared model's forward)."""

    def generate(self, *args: Any, **kwargs: Any) -> list[Sampled]:
        with torch.autocast(self.model.device.type, dtype=torch.bfloat16):
            return super().generate(*args, **kwargs)


def first_turns(policy: TransformersPolicy, n: int, max_new: int, index: str) -> list[TurnRequest]:
    tasks = load_tasks()
    cfg = EnvConfig(index=index, retriever="bm25s", prompt="compact", python=False)
    env = make_envs(1, cfg, tasks=tasks)
    out = []
    for i, tid in enumerate(tasks.ids()[:n]):
        question, info = env[0].reset(seed=i, options={"task_id": tid})
        ep = Episode(
            task_id=tid,
            question=question,
            system_prompt=info["system_prompt"],
            seed=i,
            budget=Budget(max_new_tokens=max_new),
            chat=policy.chat,
        )
        out.append(ep.request())
    env.close()
    return out


def measure(policy: TransformersPolicy, reqs: list[TurnRequest]) -> tuple[dict, list[Generation]]:
    """The timing of one `act` over `reqs`, and the turns it gave."""
    policy.generated_tokens, start = 0, time.perf_counter()
    turns = policy.act(reqs)
    wall = time.perf_counter() - start
    return {
        "generated_tokens": policy.generated_tokens,
        "wall_s": wall,
        "tokens_per_s": policy.generated_tokens / wall,
    }, turns


def same_ids_share(a: list[Generation], b: list[Generation]) -> float:
    """The share of rows two variants sampled the same ids for (the same seeds)."""
    return sum(x.ids == y.ids for x, y in zip(a, b, strict=True)) / len(b)


def sampling_step_ms(
    policy: TransformersPolicy, rows: int, vocab: int, device: str, repeats: int = 50
) -> float:
    """Milliseconds to turn one batch of logits (on `device`) into ids and log-probs on the host,
    as the decoding loop reads them (the best of `repeats`)."""
    logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(0)).to(device)
    gens = [torch.Generator().manual_seed(i) for i in range(rows)]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        tok, lp = policy._sample(logits, gens)
        tok.tolist(), lp.tolist()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--tasks", type=int, default=16)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="torch device of the model")
    p.add_argument(
        "--index",
        default=EnvConfig.index,
        help="index name or built directory (any holding the sample)",
    )
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    from agent.rollout.models import load_local

    tok, model = load_local(args.policy)
    model.to(args.device)
    sampling = SamplingConfig(temperature=1.0, batch_size=args.batch, fixed_shapes=False)
    batched = TransformersPolicy(tok, model, name="batched", sampling=sampling)
    reqs = first_turns(batched, args.tasks, args.max_new_tokens, args.index)
    fixed = replace(sampling, fixed_shapes=True)
    policies = {
        "row_loop": RowLoopPolicy(tok, model, name="row-loop", sampling=sampling),
        "host_sampling": HostSamplingPolicy(tok, model, name="host", sampling=sampling),
        "batched": batched,
        "fixed": TransformersPolicy(tok, model, name="fixed", sampling=fixed),
        "bf16": AutocastPolicy(tok, model, name="bf16", sampling=sampling),
    }
    runs: dict[str, list[dict]] = {k: [] for k in policies}
    for policy in policies.values():
        policy.act(reqs[:2])  # warm up (the system prompt's cache, allocator)
    turns: dict[str, list[Generation]] = {}  # each policy's last: the same seeds, the same ids?
    for _ in range(args.repeats):
        for name, policy in policies.items():
            stats, turns[name] = measure(policy, reqs)
            runs[name].append(stats)
    out: dict = {"args": vars(args), "load_avg_1min": os.getloadavg()[0]}
    for name, policy in policies.items():
        best = max(runs[name], key=lambda r: r["tokens_per_s"])
        out[name] = {
            **best,
            "runs": runs[name],
            "sampling_step_ms": sampling_step_ms(policy, args.batch, len(tok), args.device),
        }
    graphs = policies["fixed"].fixed
    assert graphs is not None
    out["fixed"] |= {"graph_steps": graphs.replays, "graph_fallback": graphs.fallback}
    out["fixed_over_batched"] = out["fixed"]["tokens_per_s"] / out["batched"]["tokens_per_s"]
    out["fixed_same_ids_share"] = same_ids_share(turns["batched"], turns["fixed"])
    out["bf16_over_batched"] = out["bf16"]["tokens_per_s"] / out["batched"]["tokens_per_s"]
    out["bf16_same_ids_share"] = same_ids_share(turns["batched"], turns["bf16"])
    after = out["batched"]
    out["speedup"] = after["tokens_per_s"] / out["row_loop"]["tokens_per_s"]
    out["speedup_over_host_sampling"] = after["tokens_per_s"] / out["host_sampling"]["tokens_per_s"]
    if args.device != "cpu":
        out["device_name"] = torch.cuda.get_device_name(args.device)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "decode" + ("" if args.device == "cpu" else f"_{args.device.split(':')[0]}")
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(
        ", ".join(
            f"{k} {out[k]['tokens_per_s']:.1f} tokens/s ({out[k]['sampling_step_ms']:.1f} ms a step)"
            for k in policies
        )
        + f"; batched / row loop {out['speedup']:.2f}x, / host sampling "
        f"{out['speedup_over_host_sampling']:.2f}x; fixed / batched {out['fixed_over_batched']:.2f}x "
        f"({out['fixed']['graph_steps']} graph steps, fallback: {out['fixed']['graph_fallback']}), "
        f"same ids in {out['fixed_same_ids_share']:.0%} of rows; bf16 autocast / batched "
        f"{out['bf16_over_batched']:.2f}x, same ids in {out['bf16_same_ids_share']:.0%}; "
        f"{args.tasks} first turns, batch {args.batch}, "
        f"{args.device}, {args.threads} threads, load {out['load_avg_1min']:.1f}"
    )


if __name__ == "__main__":
    main()
