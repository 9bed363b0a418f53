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
from dataclasses import dataclass

from agent.commands.compare import Metric
from agent.eval.compare import format_power, load_run, power_table
from wikisim.flags import add_config_arguments, config_from_args, option


@dataclass(frozen=True)
class PowerOptions:
    """What `wikisim power` is asked for (every field a flag and a YAML key)."""

    baseline: str = option("", "a `wikisim eval --out` folder", required=True)
    delta: float = option(0.03, "the difference to detect")
    metric: Metric = option("em", "per-episode score")
    alpha: float = option(0.05, "two-sided significance level")
    power: float = option(0.8, "probability of detecting delta")
    correlation: float = option(
        0.0, "correlation of the two policies' per-task means (0: conservative)"
    )
    seeds: tuple[int, ...] = option((1, 2, 4, 8), "seeds per task to plan for")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, PowerOptions)


def run(args: argparse.Namespace) -> int:
    o = config_from_args(PowerOptions, args)
    report = power_table(
        load_run(o.baseline, o.metric),
        o.delta,
        alpha=o.alpha,
        power=o.power,
        correlation=o.correlation,
        seeds=o.seeds,
    )
    print(format_power(report, o.metric), end="")
    return 0
