"""Would another inference engine sample GRPO's rollouts faster on a CPU? The policy's own torch
decoding against CTranslate2's (a C++ engine for transformer inference) on the same weights.

    pip install ctranslate2   # not a dependency of the package: this bench asks the question
    nice -n 10 .venv/bin/python bench/decode_engine.py [--policy data/models/smollm2-wikisim-lora]

Both decode the same first turns (the bundled questions under the env's compact system prompt,
`bench/decode.py`'s) greedily, every row exactly `--tokens` ids (no stop string ends a row, so
both run the same number of steps over the same batch), with the system prompt's keys and values
computed once (the policy's cache; CTranslate2's `static_prompt`). The weights are the policy's
own (an adapter merged into its base), converted to CTranslate2 in float32, the dtype the policy
samples GRPO's rollouts in. The two are alternated `--repeats` times and each one's best repeat is
reported: tokens/s, milliseconds a decoding step, CTranslate2's ratio to the policy, the time to
convert the weights (what a GRPO step would pay to sync them), and the share of rows whose ids
agree for their first 32 tokens. Writes bench/results/decode_engine.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from agent.rollout.policies.transformers_policy import (  # noqa: E402
    SamplingConfig,
    TransformersPolicy,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode import first_turns  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
AGREE_TOKENS = 32


class FixedLengthPolicy(TransformersPolicy):
    """The policy with no stop: every row decodes its `max_new` ids, as the engine compared does."""

    def _stopped(self, ids: list[int], limit: int) -> bool:
        return len(ids) >= limit


def shared_prefix(rows: list[list[int]]) -> int:
    """Length of the ids every row starts with (the system turn and the user turn's opening)."""
    k = 0
    while all(len(r) > k and r[k] == rows[0][k] for r in rows):
        k += 1
    return k


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--tasks", type=int, default=16, help="first turns, decoded as one batch")
    p.add_argument("--tokens", type=int, default=96, help="ids every row decodes")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--index", default="sample-qa", help="index name or built directory")
    args = p.parse_args()
    try:
        import ctranslate2
        from ctranslate2.converters import TransformersConverter
    except ImportError as e:
        raise SystemExit(
            "bench/decode_engine.py compares CTranslate2: pip install ctranslate2"
        ) from e
    torch.set_num_threads(args.threads)
    from agent.rollout.models import load_local

    tok, model = load_local(args.policy)
    policy = FixedLengthPolicy(
        tok, model, name="torch", sampling=SamplingConfig(batch_size=args.tasks)
    )
    contexts = [list(r.ids) for r in first_turns(policy, args.tasks, args.tokens, args.index)]
    k = shared_prefix(contexts)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        policy.model.save_pretrained(f"{tmp}/hf")
        tok.save_pretrained(f"{tmp}/hf")
        TransformersConverter(f"{tmp}/hf").convert(f"{tmp}/ct2", quantization="float32")
        engine = ctranslate2.Generator(
            f"{tmp}/ct2", device="cpu", intra_threads=args.threads, compute_type="float32"
        )
        convert_s = time.perf_counter() - start
    static = tok.convert_ids_to_tokens(contexts[0][:k])
    prompts = [tok.convert_ids_to_tokens(c[k:]) for c in contexts]
    n = args.tokens

    def run_torch() -> list[list[int]]:
        return [
            ids for ids, _, _ in policy.generate(contexts, [n] * len(contexts), [0] * len(contexts))
        ]

    def run_engine() -> list[list[int]]:
        res = engine.generate_batch(
            prompts,
            static_prompt=static,
            cache_static_prompt=True,
            max_length=n,
            min_length=n,
            sampling_topk=1,
            include_prompt_in_result=False,
            max_batch_size=len(prompts),
        )
        return [list(r.sequences_ids[0]) for r in res]

    runs: dict[str, list[float]] = {"torch": [], "ctranslate2": []}
    ids: dict[str, list[list[int]]] = {}
    engines = (("torch", run_torch), ("ctranslate2", run_engine))
    for _, fn in engines:
        fn()  # warm up: the system prompt's cache, the allocator
    for _ in range(args.repeats):
        for name, fn in engines:
            start = time.perf_counter()
            ids[name] = fn()
            runs[name].append(time.perf_counter() - start)
            assert all(len(r) == n for r in ids[name]), f"{name} decoded rows of other lengths"
    out: dict = {"args": vars(args), "load_avg_1min": os.getloadavg()[0], "shared_prefix": k}
    for name, walls in runs.items():
        best = min(walls)
        out[name] = {
            "wall_s": best,
            "runs_s": walls,
            "tokens_per_s": n * len(contexts) / best,
            "ms_a_step": 1e3 * best / n,
        }
    out["ctranslate2_over_torch"] = (
        out["ctranslate2"]["tokens_per_s"] / out["torch"]["tokens_per_s"]
    )
    out["convert_s"] = convert_s
    out["same_first_ids_share"] = sum(
        a[:AGREE_TOKENS] == b[:AGREE_TOKENS]
        for a, b in zip(ids["torch"], ids["ctranslate2"], strict=True)
    ) / len(contexts)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "decode_engine.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(
        f"torch {out['torch']['tokens_per_s']:.1f} tokens/s ({out['torch']['ms_a_step']:.0f} ms a "
        f"step), ctranslate2 {ctranslate2.__version__} {out['ctranslate2']['tokens_per_s']:.1f} "
        f"tokens/s ({out['ctranslate2']['ms_a_step']:.0f} ms a step): ctranslate2 / torch "
        f"{out['ctranslate2_over_torch']:.2f}x; converting the weights {convert_s:.1f} s; the same "
        f"first {AGREE_TOKENS} ids in {out['same_first_ids_share']:.0%} of rows; {len(contexts)} "
        f"rows x {n} ids, {args.threads} threads, load {out['load_avg_1min']:.1f}"
    )


if __name__ == "__main__":
    main()
