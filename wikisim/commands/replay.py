"""`wikisim replay FILE`: re-run recorded episodes and report every step that differs."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from wikisim.flags import add_config_arguments, config_from_args, option


@dataclass(frozen=True)
class ReplayOptions:
    """What `wikisim replay` is asked for (every field a flag and a YAML key)."""

    file: tuple[str, ...] = option(
        (),
        "trajectory file(s) (JSONL written by wikisim.env.replay.RecordEpisodes)",
        positional=True,
        required=True,
    )
    index: str | None = option(None, "index directory to replay against (None: the recorded one)")
    tasks: str | None = option(None, "task file (None: the recorded one)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, ReplayOptions)


def run(args: argparse.Namespace) -> int:
    from wikisim.env.replay import replay

    o = config_from_args(ReplayOptions, args)
    overrides = {k: v for k, v in (("index", o.index), ("tasks", o.tasks)) if v}
    identical = True
    for file in o.file:
        report = replay(file, **overrides)
        for d in report.differences:
            print(d)
        verdict = "identical" if report.identical else f"{len(report.differences)} difference(s)"
        print(f"{file}: replayed {report.episodes} episode(s), {report.steps} step(s): {verdict}")
        identical &= report.identical
    return 0 if identical else 1
