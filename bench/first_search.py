"""What one search shows a small policy, per retriever: the share of the learning bench's held-out
questions whose first search puts a gold answer on screen.

The trained SmolLM2 policies search once and answer from what that search showed (they read a
gold answer right far more often than they find one: `bench/tool_patterns.py`), so the share of
first searches that show one bounds what they score. Each held-out question is searched through
the env's own search tool, in the learning bench's context (its index, 3 results, its snippets),
typed two ways: whole (what the policies mostly type) and as its content words
(`agent.train.teachers.keywords`), and either of the two (both searched, as a policy that
searches twice would); a gold answer is on screen when it occurs in the results less the header
that repeats the query (`agent.train.teachers.evidence_text`). Prints the shares and
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
from agent.train.teachers import evidence_text, grounded_in, keywords, searchable  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import Task, TaskSet  # noqa: E402
from wikisim.flags import build_config  # noqa: E402
from wikisim.index import RETRIEVERS  # noqa: E402
from wikisim.tools.protocol import format_tool_call  # noqa: E402

TYPINGS = {"whole": lambda q: q, "content words": lambda q: keywords(searchable(q), 8)}
#: Both typings searched, one after the other: what a policy that searches twice could see.
EITHER = "either"
#: The shares reported per retriever and question group.
SHARES = (*TYPINGS, EITHER)


def shown(retriever: str, tasks: list[Task]) -> dict[str, float]:
    """Per typing, the share of `tasks` whose one search shows a gold answer; and seconds a
    search, the env's reset before it included."""
    cfg = build_config(EnvConfig, {**ENV, "retriever": retriever})
    env = make_envs(1, cfg, tasks=TaskSet(tasks, "held-out"))[0]
    hits = dict.fromkeys(SHARES, 0)
    start = time.perf_counter()
    for task in tasks:
        showed = []
        for how, typed in TYPINGS.items():
            env.reset(seed=0, options={"task_id": task.id})
            call = format_tool_call("search", {"query": typed(task.question)})
            obs = env.step(call)[0]
            showed.append(any(grounded_in(a, [evidence_text(obs)]) for a in task.answers))
            hits[how] += showed[-1]
        hits[EITHER] += any(showed)
    wall = time.perf_counter() - start
    env.close()
    return {
        **{k: v / len(tasks) for k, v in hits.items()},
        "s_a_search": wall / (len(TYPINGS) * len(tasks)),
    }


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
            print(
                f"{name:10s} {g:13s} whole {r['whole']:.3f}, content words "
                f"{r['content words']:.3f}, either {r[EITHER]:.3f} ({ratios} of {names[0]}); "
                f"{1e3 * r['s_a_search']:.1f} ms a search"
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "first_search.json").write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
