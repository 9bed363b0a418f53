"""What one search shows a small policy, per retriever: the share of the learning bench's held-out
questions whose first search puts a gold answer on screen.

The trained SmolLM2 policies search once and answer from what that search showed (they read a
gold answer right far more often than they find one: `bench/tool_patterns.py`), so the share of
first searches that show one bounds what they score. Each held-out question is searched through
the env's own search tool, in the learning bench's context (its index, 3 results, its snippets),
typed three ways: whole (what the policies mostly type), as its content words
(`agent.train.teachers.keywords`) and as the copy teacher types it (`copied`: the question less
what no page states); and searched twice, as a policy that searches twice would: whole, then its
content words ("either"), or copied, then the first title of those results that the question
does not name (`shown_title`, the copy teacher's second search). A gold answer is on screen when
it occurs in the results less the header that repeats the query
(`agent.train.teachers.evidence_text`). Prints the shares and
seconds a search per retriever with each one's ratio to the first named, and writes
bench/results/first_search.json.

    .venv/bin/python bench/first_search.py --retrievers bm25s,hybrid,lucene,dense
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_agent import ENV, RESULTS, load_data  # noqa: E402

from agent.rollout.episodes import make_envs  # noqa: E402
from agent.train.teachers import (  # noqa: E402
    copied,
    evidence_text,
    grounded_in,
    keywords,
    searchable,
    shown_title,
)
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import Task, TaskSet  # noqa: E402
from wikisim.flags import build_config  # noqa: E402
from wikisim.index import RETRIEVERS  # noqa: E402
from wikisim.tools.protocol import format_tool_call  # noqa: E402

TYPINGS = {
    "whole": lambda q: q,
    "content words": lambda q: keywords(searchable(q), 8),
    "copied": copied,
}
#: Whole, then content words, one after the other: what a policy that searches twice could see.
EITHER = "either"
#: Copied, then the first title those results show that the question does not name.
COPIED_THEN_SHOWN = "copied, then a title shown"
#: The shares reported per retriever and question group.
SHARES = (*TYPINGS, EITHER, COPIED_THEN_SHOWN)


def shown(retriever: str, tasks: list[Task]) -> dict[str, float]:
    """Per typing, the share of `tasks` whose one search shows a gold answer; and seconds a
    search, the env's reset before it included."""
    cfg = build_config(EnvConfig, {**ENV, "retriever": retriever})
    env = make_envs(1, cfg, tasks=TaskSet(tasks, "held-out"))[0]
    hits = dict.fromkeys(SHARES, 0)
    start = time.perf_counter()
    searches = 0

    def search(task: Task, query: str) -> tuple[bool, str]:
        nonlocal searches
        env.reset(seed=0, options={"task_id": task.id})
        obs = env.step(format_tool_call("search", {"query": query}))[0]
        searches += 1
        return any(grounded_in(a, [evidence_text(obs)]) for a in task.answers), obs

    for task in tasks:
        showed, seen = {}, {}
        for how, typed in TYPINGS.items():
            showed[how], seen[how] = search(task, typed(task.question))
            hits[how] += showed[how]
        hits[EITHER] += showed["whole"] or showed["content words"]
        title = shown_title(seen["copied"], task.question, [copied(task.question)])
        hits[COPIED_THEN_SHOWN] += showed["copied"] or (
            title is not None and search(task, title)[0]
        )
    wall = time.perf_counter() - start
    env.close()
    return {**{k: v / len(tasks) for k, v in hits.items()}, "s_a_search": wall / searches}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--retrievers", default="bm25s,hybrid", help="comma-separated, the first the baseline"
    )
    a = p.parse_args()
    names = a.retrievers.split(",")
    if unknown := [n for n in names if n not in RETRIEVERS]:
        raise SystemExit(f"--retrievers: unknown {unknown}; known: {', '.join(RETRIEVERS)}")
    data = load_data(0)
    groups = {
        "synthesized": [t for k in ("synth-test", "synth-dev") for t in data.held[k]],
        "human-written": [
            t for k in ("bundled", "hotpotqa-held", "musique-held") for t in data.held[k]
        ],
    }
    out: dict = {"env": ENV, "questions": {k: len(v) for k, v in groups.items()}, "retrievers": {}}
    for name in names:
        out["retrievers"][name] = {g: shown(name, tasks) for g, tasks in groups.items()}
    base = out["retrievers"][names[0]]
    for name, by in out["retrievers"].items():
        for g, r in by.items():
            ratios = ", ".join(f"{r[k] / base[g][k]:.2f}x" if base[g][k] else "-" for k in SHARES)
            shares = ", ".join(f"{k} {r[k]:.3f}" for k in SHARES)
            print(
                f"{name:10s} {g:13s} {shares} ({ratios} of {names[0]}); "
                f"{1e3 * r['s_a_search']:.1f} ms a search"
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "first_search.json").write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
