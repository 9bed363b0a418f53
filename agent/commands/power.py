"""`wikisim power --baseline RUN --delta 0.03`: how many tasks and seeds detect that difference.

    wikisim power --baseline runs/eval [--delta 0.03] [--metric em] [--alpha 0.05] [--power 0.8]
                  [--correlation 0.0] [--seeds 1 2 4 8]

The baseline run's scores give the variance between tasks and between seeds of one task
(a one-way random-effects split); a paired two-sided test of two policies that vary alike
then needs n = ((z_{1-alpha/2} + z_power) * sd / delta)^2 tasks, where sd is that of one
task's difference. `--correlation` is the correlation of the two policies' per-task means:
0 (the default) is the safe side; policies on the same questions usually correlate.
"""

from __future__ import annotations

import argparse

from agent.commands.compare import add_metric_argument
from agent.eval.compare import format_power, load_run, power_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline", required=True, metavar="RUN", help="a `wikisim eval --out` folder"
    )
    parser.add_argument(
        "--delta", type=float, default=0.03, help="the difference to detect (default 0.03)"
    )
    add_metric_argument(parser)
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)"
    )
    parser.add_argument(
        "--power", type=float, default=0.8, help="probability of detecting delta (default 0.8)"
    )
    parser.add_argument(
        "--correlation",
        type=float,
        default=0.0,
        help="correlation of the two policies' per-task means (default 0: conservative)",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[1, 2, 4, 8], help="seeds per task to plan for"
    )


def run(args: argparse.Namespace) -> int:
    report = power_table(
        load_run(args.baseline, args.metric),
        args.delta,
        alpha=args.alpha,
        power=args.power,
        correlation=args.correlation,
        seeds=tuple(args.seeds),
    )
    print(format_power(report, args.metric), end="")
    return 0
