"""`wikisim eval`: a policy on a task set, over seeds -> summary.json, results.md, plots, trajectories.

Every `EvalConfig` setting (the env's included) is a flag and a `--config` YAML key.
"""

from __future__ import annotations

import argparse
import json

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.report import markdown_table
from wikisim.flags import add_config_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, EvalConfig)
    parser.add_argument("--out", required=True, help="directory for the results")
    parser.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace) -> int:
    summary, _ = evaluate(
        config_from_args(EvalConfig, args), args.out, progress=not args.no_progress
    )
    print(markdown_table([summary]), end="")
    print(json.dumps({"pass@k": summary["pass@k"], "out": args.out}))
    return 0
