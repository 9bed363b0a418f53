"""`wikisim eval`: a policy on a task set, over seeds -> summary.json, results.md, plots, trajectories."""

from __future__ import annotations

import argparse
import json

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.report import markdown_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", help="built index directory (default: the bundled sample, built once)")
    parser.add_argument("--tasks", help="task file: our JSONL, HotpotQA, MuSiQue or NQ (default: bundled sample)")
    parser.add_argument("--policy", required=True,
                        help="search-answer | oracle | smollm2 | tiny | openai:MODEL@BASE_URL | a local model folder")
    parser.add_argument("--seeds", type=int, default=1, help="episodes per task (seeds 0..K-1); pass@k for k <= K")
    parser.add_argument("--max-turns", type=int, default=8, help="turn limit of each episode")
    parser.add_argument("--out", required=True, help="directory for the results")
    parser.add_argument("--envs", type=int, default=8, help="episodes run at once (the policy's batch)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=8, help="model batch size / HTTP concurrency")
    parser.add_argument("--max-new-tokens", type=int, default=512, help="tokens per turn")
    parser.add_argument("--max-context", type=int, default=8192, help="tokens per episode")
    parser.add_argument("--reward", choices=("em", "f1", "judge"), default="em")
    parser.add_argument("--judge", metavar="MODEL@BASE_URL", help="LLM judge server (with --reward judge)")
    parser.add_argument("--retriever", default="bm25s", help="bm25s | lucene | dense | hybrid")
    parser.add_argument("--tokenizer", help="model folder whose tokenizer gives text-only policies token ids")
    parser.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--no-progress", action="store_true")


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    judge = None
    if args.judge:
        model, _, url = args.judge.partition("@")
        judge = {"model": model, "base_url": url}
    return EvalConfig(
        policy=args.policy, index=args.index, tasks=args.tasks, seeds=args.seeds, max_turns=args.max_turns,
        envs=args.envs, temperature=args.temperature, top_p=args.top_p, batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens, max_context_tokens=args.max_context, reward=args.reward, judge=judge,
        retriever=args.retriever, tokenizer=args.tokenizer, limit=args.limit,
    )


def run(args: argparse.Namespace) -> int:
    summary, _ = evaluate(config_from_args(args), args.out, progress=not args.no_progress)
    print(markdown_table([summary]), end="")
    print(json.dumps({"pass@k": summary["pass@k"], "out": args.out}))
    return 0
