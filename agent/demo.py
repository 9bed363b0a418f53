"""`python -m agent.demo` (what `make demo` runs): the bundled corpus, tasks and baselines -> a leaderboard.

Builds the bundled 2014 sample index once (cached), then evaluates the scripted floor
(`search-answer`), the bundled real LLM (SmolLM2-135M-Instruct, greedy, small budgets so it
fits a few minutes on 2 CPU cores) untrained and trained (the shipped LoRA adapter, side by side
in the context it was trained in) and the `oracle` ceiling on the bundled tasks, and prints
one Markdown leaderboard. Results land in `runs/demo/<policy>/`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.report import markdown_table
from agent.train.config import GRPOConfig, recipe
from wikisim.flags import build_config
from wikisim.index.build import ensure_bundled_index
from wikisim.paths import DATA_DIR

#: SmolLM2 after rejection-sampled SFT and GRPO in WikiSim-v0 (a LoRA adapter, a few MB; how it was
#: made: data/models/README.md). Shown beside the untrained model, in the context it was trained in.
TRAINED = DATA_DIR / "models" / "smollm2-wikisim-lora"
METHOD = recipe(GRPOConfig)
#: the method's context (configs/learn/grpo.yaml: 3 results a search, 150-token extracts, the compact
#: prompt, 4 turns of 128 tokens, thinks closed at 56), on the bundled index and tasks
SMALL_CONTEXT: dict[str, int | str] = {
    "max_turns": METHOD.env.max_turns,
    "max_new_tokens": METHOD.max_new_tokens,
    "think_budget": METHOD.think_budget,
    "max_context_tokens": METHOD.max_context_tokens,
    "search_k": METHOD.env.search_k,
    "visit_tokens": METHOD.env.visit_tokens,
    "prompt": METHOD.env.prompt,
    "retriever": METHOD.env.retriever,
    "envs": 36,  # the bundled tasks in one batch: 218 s against 345 s in batches of 12 (untrained, 2 cores)
    "batch_size": 36,
}
LINEUP: tuple[tuple[str, str, dict[str, int | str]], ...] = (
    ("search-answer", "search-answer", {}),
    ("smollm2", "smollm2", SMALL_CONTEXT),
    ("smollm2-trained", str(TRAINED), SMALL_CONTEXT),
    ("oracle", "oracle", {}),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default="runs/demo", help="where each policy's results go")
    parser.add_argument("--limit", type=int, default=0, help="only the first N bundled tasks")
    parser.add_argument("--skip-llm", action="store_true", help="scripted baselines only")
    args = parser.parse_args(argv)
    print("building the bundled sample index (once; cached) ...", flush=True)
    index = ensure_bundled_index(dense=True)  # the default retriever, hybrid, reads the dense index
    summaries = []
    for name, policy, overrides in LINEUP:
        if args.skip_llm and name.startswith("smollm2"):
            continue
        config = build_config(
            EvalConfig,
            {
                "policy": policy,
                "index": str(index),
                "limit": args.limit,
                "max_turns": 4,
                **overrides,
            },
        )
        summary, _ = evaluate(config, Path(args.out) / name)
        summaries.append(summary)
    print("\n## WikiSim-v0 leaderboard: bundled tasks (data/tasks/sample.jsonl)\n")
    print(markdown_table(summaries), end="")
    print(f"\nper-policy results, plots and trajectories: {args.out}/<policy>/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
