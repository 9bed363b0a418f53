"""Which tools a policy calls in an episode, in order, and how often each pattern is right.

The learning bench counts searches and visits an episode; this says whether a policy ever reads
further than its first search (search then visit, search twice) and what that earns, which is
what the learning log asks of a teacher bank weighted to longer episodes.

    python bench/tool_patterns.py bench/results/RUN/seed0/eval/sft bench/results/RUN/seed0/eval/grpo
    python bench/tool_patterns.py --sample bench/results/RUN/seed0/sft/final --questions 48 --samples 4
    python bench/tool_patterns.py --sample bench/results/RUN/seed0/sft/final \
        --after-errors bench/results/RUN/seed0/eval/sft --samples 8
    python bench/tool_patterns.py --sample bench/results/RUN/seed0/sft/final \
        --after-unseen bench/results/RUN/seed0/eval/sft --samples 8

The first reads evals' `trajectories.jsonl`, and tells their episodes apart a second way too: by
what their first call put on screen (a gold answer; a bridge, the page a multi-hop question leads
to next, named but no gold answer; neither; no call that ran) and what each earned: a policy that
only reads scores nothing where its first search showed a bridge, so the share of those is the
room a second search has. The second samples a checkpoint at GRPO's temperature
on training questions of the learning bench (its env options and questions, drawn with
`--seed`), as GRPO's groups would play them from scratch. Patterns are written one letter a
call (s search, v visit, ? a call the env could not read), "none" for an episode without one.
The third samples the checkpoint from each state of an eval where the env refused the first
call, that turn replayed: what it does next (calls again and runs, answers, is refused again)
says whether a GRPO group started there could hold a retry to reward. The fourth does the same
from each state where the first call was a search whose results showed no gold answer: whether a
group started there holds a second search that finds it and a right answer after it, which GRPO
could reward (a policy that answers there is wrong, the answer unseen).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_agent import ENV, GRPO_RECIPE, load_data  # noqa: E402

from agent.rollout.trajectory import Trajectory, read_trajectories  # noqa: E402
from agent.train.episodes import EnvRunner, Sampler  # noqa: E402
from agent.train.sft import gold_retrieved  # noqa: E402
from agent.train.teachers import evidence_text, grounded_in, read_not_guessed, refused  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import Task, TaskSet, title_of  # noqa: E402
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


# a title's disambiguator: "Lover Come Back (1961 film)" is named "Lover Come Back"
_DISAMBIGUATION = re.compile(r"\s*\([^)]*\)$")


def bridges(task: Task) -> list[str]:
    """The evidence pages' names that the question does not name and that are not an answer: the
    entities a multi-hop question leads through (MuSiQue's "History of Mississippi" is missed:
    snippets name "Mississippi")."""
    named = [_DISAMBIGUATION.sub("", title_of(u)) for u in task.evidence]
    return [
        b
        for b in dict.fromkeys(named)
        if not grounded_in(b, [task.question])
        and not any(grounded_in(a, [b]) or grounded_in(b, [a]) for a in task.answers)
    ]


def first_showed(t: Trajectory, task: Task) -> str:
    """What the episode's first call put on screen: a gold answer, else a bridge (`bridges`),
    else neither; or no call that ran (an answer first, or a call the env refused)."""
    first = t.turns[0] if t.turns else None
    seen = evidence_text(first.observation) if first and first.observation else ""
    if not seen:
        return "no call that ran"
    if any(grounded_in(a, [seen]) for a in task.answers):
        return "a gold answer"
    if any(grounded_in(b, [seen]) for b in bridges(task)):
        return "a bridge, no gold answer"
    return "neither"


def shown_table(trajs: Sequence[Trajectory], tasks: TaskSet, title: str) -> None:
    """Episodes by what their first call showed (`first_showed`): how many, and their EM."""
    by: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        by[first_showed(t, tasks.get(t.task_id))].append(t.metrics.get("em", 0.0))
    print(f"{title}: what the first call showed")
    print(f"  {'shown':26s} {'episodes':>8s} {'EM':>6s}")
    for k in ("a gold answer", "a bridge, no gold answer", "neither", "no call that ran"):
        if by[k]:
            print(f"  {k:26s} {len(by[k]):8d} {sum(by[k]) / len(by[k]):6.3f}")


def played(path: str) -> Iterable[Trajectory]:
    """The episodes of an eval folder or of a trajectories.jsonl file."""
    f = Path(path)
    return read_trajectories(f / "trajectories.jsonl" if f.is_dir() else f)


def from_files(paths: Sequence[str]) -> None:
    tasks = load_data(0).tasks
    for path in paths:
        trajs = list(played(path))
        table(rows(trajs, tasks), str(path))
        shown_table(trajs, tasks, str(path))


def sampler(policy: str, tasks: TaskSet) -> tuple[Sampler, Any]:
    """GRPO's sampler over the learning bench's `tasks`, in its episode budgets
    (configs/learn/grpo.yaml), and the checkpoint `policy` to sample."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    env = build_config(EnvConfig, {**ENV, "max_turns": GRPO_RECIPE.env.max_turns})
    runner = EnvRunner(
        tasks,
        env,
        max_new_tokens=GRPO_RECIPE.max_new_tokens,
        max_context_tokens=GRPO_RECIPE.max_context_tokens,
        slots=64,
        think_budget=GRPO_RECIPE.think_budget,
    )
    tok = AutoTokenizer.from_pretrained(policy)
    return runner.sampler(tok), AutoModelForCausalLM.from_pretrained(policy)


def sampled(policy: str, questions: int, samples: int, seed: int, temperature: float) -> None:
    data = load_data(0)
    sample, model = sampler(policy, data.tasks)
    ids = random.Random(seed).sample(data.train, questions)
    trajs = sample(model, ids, samples, seed + 1, temperature)
    table(
        rows(trajs, data.tasks),
        f"{policy} at temperature {temperature}, {questions} training questions",
    )


def after_error(t: Trajectory) -> str:
    """What an episode started from a refused first turn did in its next turn."""
    if len(t.turns) < 2:
        return "nothing (turns ran out)"
    first, after = t.turns[0], t.turns[1]
    if after.observation and refused(after.observation):
        return "refused again" + (", word for word" if after.text == first.text else "")
    calls = pattern(after.tool_calls)
    if calls != "none":
        return "called again, and it ran: " + calls
    return "answered" if t.answer is not None else "neither called nor answered"


def after_unseen(t: Trajectory, answers: Sequence[str]) -> str:
    """What an episode started after a search that showed no gold answer did next, and whether
    its own later calls put one on screen."""
    if len(t.turns) < 2:
        return "nothing (turns ran out)"
    calls = pattern(c for u in t.turns[1:] for c in u.tool_calls)
    if calls == "none":
        return "answered" if t.answer is not None else "neither called nor answered"
    found = "found a gold answer" if gold_retrieved(t, answers) else "no gold answer on screen"
    return f"called {calls}: {found}"


def refused_first(t: Trajectory) -> bool:
    return bool(t.turns and t.turns[0].observation and refused(t.turns[0].observation))


def unseen_first(t: Trajectory, answers: Sequence[str]) -> bool:
    """The first turn was a search the env ran, and no gold answer was on screen after it."""
    if not t.turns or tuple(t.turns[0].tool_calls) != ("search",) or refused_first(t):
        return False
    first = t.turns[0]
    return not any(read_not_guessed(g, [(first.text, first.observation)]) for g in answers)


def after_first(
    evals: str, policy: str, samples: int, seed: int, temperature: float, *, unseen: bool
) -> None:
    """Sample `policy` from each state of an eval after its first turn (a call the env refused,
    or with `unseen` a search that showed no gold answer), that turn replayed, and say what the
    continuations did next and what they earned."""
    tasks = load_data(0).tasks
    answers = {t.id: t.answers for t in tasks}
    if unseen:
        chosen = [t for t in played(evals) if unseen_first(t, answers[t.task_id])]
        what = "first searches that showed no gold answer"

        def kind(t: Trajectory) -> str:
            return after_unseen(t, answers[t.task_id])
    else:
        chosen = [t for t in played(evals) if refused_first(t)]
        what = "refused first calls"
        kind = after_error
    if not chosen:
        raise SystemExit(f"{evals}: no episode of {what}")
    sample, model = sampler(policy, tasks)
    starts = {t.task_id: (t.turns[0].text,) for t in chosen}
    trajs = sample(model, list(starts), samples, seed + 1, temperature, starts=starts)
    n = len(trajs)
    print(
        f"{policy} at temperature {temperature}, {samples} samples from each of the "
        f"{len(chosen)} {what} of {evals} (greedy then: "
        + ", ".join(f"{k} {v}" for k, v in Counter(map(kind, chosen)).items())
        + ")"
    )
    by: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        em = t.metrics.get("em", 0.0)
        by[kind(t)].append(em)
        groups[t.task_id].append(em)
    for k, ems in sorted(by.items(), key=lambda kv: -len(kv[1])):
        print(f"  {k:48s} {len(ems):4d} {len(ems) / n:6.3f}  EM {sum(ems) / len(ems):.3f}")
    print(f"  EM {sum(sum(ems) for ems in by.values()) / n:.3f}")
    mixed = sum(1 for ems in groups.values() if 0 < sum(ems) < len(ems))
    print(
        f"  states whose {samples} samples both solved and failed (a GRPO group's advantage): {mixed}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", help="eval folders or trajectories.jsonl files")
    p.add_argument("--sample", default="", help="a checkpoint folder to sample instead")
    p.add_argument(
        "--after-errors",
        default="",
        help="with --sample: an eval folder whose refused first calls the checkpoint goes on from",
    )
    p.add_argument(
        "--after-unseen",
        default="",
        help="with --sample: an eval folder whose first searches that showed no gold answer the "
        "checkpoint goes on from",
    )
    p.add_argument("--questions", type=int, default=48)
    p.add_argument("--samples", type=int, default=4, help="episodes a question")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=GRPO_RECIPE.temperature)
    a = p.parse_args()
    if bool(a.paths) == bool(a.sample):
        raise SystemExit("name eval folders or --sample a checkpoint, one of the two")
    if (a.after_errors or a.after_unseen) and not a.sample:
        raise SystemExit(
            "--after-errors and --after-unseen need --sample: the checkpoint that goes on"
        )
    if a.after_errors and a.after_unseen:
        raise SystemExit("--after-errors or --after-unseen, one of the two")
    if a.after_errors or a.after_unseen:
        evals, unseen = a.after_errors or a.after_unseen, bool(a.after_unseen)
        after_first(evals, a.sample, a.samples, a.seed, a.temperature, unseen=unseen)
    elif a.sample:
        sampled(a.sample, a.questions, a.samples, a.seed, a.temperature)
    else:
        from_files(a.paths)


if __name__ == "__main__":
    main()
