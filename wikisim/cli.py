"""`wikisim <command>`: the composition root, so the only place that names both packages.

Each command is a module with `add_arguments(parser)` and `run(args) -> int`; commands
that drive agents live in `agent.commands` (agent imports wikisim, never the reverse).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from wikisim import __version__
from wikisim.errors import WikisimError

COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("wikisim.commands.build", "build a page store and search indexes from dumps"),
    "search": ("wikisim.commands.search", "search a built index"),
    "replay": ("wikisim.commands.replay", "re-run a trajectory file and report differing steps"),
    "synth": ("wikisim.commands.synth", "synthesise verified SailorFog-QA-V2 questions"),
    "serve": (
        "wikisim.commands.serve",
        "serve search, visit and scholar over HTTP (also as Search-R1, Serper, Jina)",
    ),
    "mcp": ("wikisim.commands.mcp", "serve the env's tools over MCP (stdio or streamable HTTP)"),
    "eval": ("agent.commands.eval", "evaluate a policy on a task set"),
    "sweep": ("agent.commands.sweep", "run a grid of settings x seeds"),
    "compare": ("agent.commands.compare", "paired comparison of eval runs on the same tasks"),
    "power": ("agent.commands.power", "tasks and seeds needed to detect a difference"),
    "train": ("agent.commands.train", "train a policy: sft or grpo"),
}


def _available() -> dict[str, tuple[str, str]]:
    return {name: spec for name, spec in COMMANDS.items() if importlib.util.find_spec(spec[0])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wikisim", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"wikisim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in _available().items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
        modules[name] = module
    args = parser.parse_args(argv)
    try:
        return int(modules[args.command].run(args) or 0)
    except WikisimError as e:
        print(f"wikisim {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
