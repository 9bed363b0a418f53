"""`wikisim replay FILE`: re-run recorded episodes and report every step that differs."""

from __future__ import annotations

import argparse

from wikisim.env.replay import replay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", help="trajectory file (JSONL written by wikisim.env.replay.RecordEpisodes)"
    )
    parser.add_argument(
        "--index", help="index directory to replay against (default: the recorded one)"
    )
    parser.add_argument("--tasks", help="task file (default: the recorded one)")


def run(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in (("index", args.index), ("tasks", args.tasks)) if v}
    report = replay(args.file, **overrides)
    for d in report.differences:
        print(d)
    verdict = "identical" if report.identical else f"{len(report.differences)} difference(s)"
    print(f"replayed {report.episodes} episode(s), {report.steps} step(s): {verdict}")
    return 0 if report.identical else 1
