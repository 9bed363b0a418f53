"""Which tools a policy calls in an episode, in order, and how often each pattern is right.

The learning bench counts searches and visits an episode; this says whether a policy ever reads
further than its first search (search then visit, search twice) and what that earns, which is
what the learning log asks of a teacher bank weighted to longer episodes.

    python bench/tool_patterns.py bench/results/RUN/seed0/eval/sft bench/results/RUN/seed0/eval/grpo
    python bench/tool_patterns.py --sample bench/results/RUN/seed0/sft/final --questions 48 --samples 4

The first reads evals' `trajectories.jsonl`; the second samples a checkpoint at GRPO's temperature
on training questions of the learning bench (its env options and questions, drawn with
`--seed`), as GRPO's groups would play them from scratch. Patterns are written one letter a
call (s search, v visit, ? a call the env could not read), "none" for an episode without one.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_agent import ENV, GRPO_RECIPE, load_data  # noqa: E402

from agent.rollout.trajectory import Trajectory, read_trajectories  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.sft import gold_retrieved  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import TaskSet  # noqa: E402
from wikisim.flags import build_config  # noqa: E402


def pattern(tool_calls: Iterable[str]) -> str:
    return "-".join(c[0] for c in tool_calls if c != "answer") or "none"


def table(episodes: Sequence[tuple[str, float, float]], title: str) -> None:
    """(pattern, EM, gold retrieved) per episode -> a table, most common pattern first."""
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p, em, got in episodes:
        by[p].append((em, got))
    n = len(episodes)
    searches = sum(p.split("-").count("s") for p, _, _ in episodes) / n
    visits = sum(p.split("-").count("v") for p, _, _ in episodes) / n
    print(f"{title}: {n} episodes, searches {searches:.3f} and visits {visits:.3f} an episode")
    print(f"  {'pattern':10s} {'episodes':>8s} {'EM':>6s} {'gold seen':>9s}")
    for p, rows in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        em = sum(r[0] for r in rows) / len(rows)
        got = sum(r[1] for r in rows) / len(rows)
        print(f"  {p:10s} {len(rows):8d} {em:6.3f} {got:9.3f}")


def rows(trajs: Iterable[Trajectory], tasks: TaskSet) -> list[tuple[str, float, float]]:
    """(pattern, EM, whether the policy's own calls put a gold answer on screen) per episode."""
    return [
        (
            pattern(c for u in t.turns for c in u.tool_calls),
            t.metrics.get("em", 0.0),
            float(gold_retrieved(t, tasks.get(t.task_id).answers)),
        )
        for t in trajs
    ]


def from_files(paths: Sequence[str]) -> None:
    tasks = load_data(0).tasks
    for path in paths:
        f = Path(path)
        f = f / "trajectories.jsonl" if f.is_dir() else f
        table(rows(read_trajectories(f), tasks), str(path))


def sampled(policy: str, questions: int, samples: int, seed: int, temperature: float) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    data = load_data(0)
    # the episode budgets GRPO samples under (configs/learn/grpo.yaml), as the learning bench's
    env = build_config(EnvConfig, {**ENV, "max_turns": GRPO_RECIPE.env.max_turns})
    runner = EnvRunner(
        data.tasks,
        env,
        max_new_tokens=GRPO_RECIPE.max_new_tokens,
        max_context_tokens=GRPO_RECIPE.max_context_tokens,
        slots=64,
        think_budget=GRPO_RECIPE.think_budget,
    )
    tok = AutoTokenizer.from_pretrained(policy)
    model = AutoModelForCausalLM.from_pretrained(policy)
    ids = random.Random(seed).sample(data.train, questions)
    trajs = runner.sampler(tok)(model, ids, samples, seed + 1, temperature)
    table(
        rows(trajs, data.tasks),
        f"{policy} at temperature {temperature}, {questions} training questions",
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", help="eval folders or trajectories.jsonl files")
    p.add_argument("--sample", default="", help="a checkpoint folder to sample instead")
    p.add_argument("--questions", type=int, default=48)
    p.add_argument("--samples", type=int, default=4, help="episodes a question")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=GRPO_RECIPE.temperature)
    a = p.parse_args()
    if bool(a.paths) == bool(a.sample):
        raise SystemExit("name eval folders or --sample a checkpoint, one of the two")
    if a.sample:
        sampled(a.sample, a.questions, a.samples, a.seed, a.temperature)
    else:
        from_files(a.paths)


if __name__ == "__main__":
    main()
