"""`wikisim eval`: a policy on a task set, over seeds -> summary.json, results.md, plots, trajectories.

Every `EvalConfig` setting (the env's included) is a flag and a `--config` YAML key.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.report import markdown_table
from wikisim.flags import add_config_arguments, config_from_args, option


@dataclass(frozen=True)
class EvalOptions:
    """What `wikisim eval` is asked for: the run's `EvalConfig` and where its results go."""

    eval: EvalConfig = field(default_factory=EvalConfig)
    out: str = option("", "directory for the results", required=True)
    progress: bool = option(True, "progress bar (--no-progress: none)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, EvalOptions)


def run(args: argparse.Namespace) -> int:
    o = config_from_args(EvalOptions, args)
    summary, _ = evaluate(o.eval, o.out, progress=o.progress)
    print(markdown_table([summary]), end="")
    print(json.dumps({"pass@k": summary["pass@k"], "out": o.out}))
    return 0
