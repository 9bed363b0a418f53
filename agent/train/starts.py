"""GRPO rollouts that start inside a teacher's episode: a reverse curriculum's first stage.

From a weak SFT policy most questions' groups are all wrong, and an all-wrong group has no
advantage to learn from (learn_agent's CPU probe: 7 of 8 training questions never solved).
Started from a teacher's episode just before its answer, the policy has already searched and
read the page that holds the answer; what is left is to read it off, the skill whose failure
is most of its wrong answers (another span of what it read). `own_starts` takes those states
from the policy's own episodes instead, where its searches showed a gold answer: the
observations it will face when evaluated, not the teacher's. Starting RL from states along a
demonstration is Salimans & Chen's (2018) reverse curriculum, which R^3 (Xi et al., 2024)
applies to LLM reasoning. The teacher's turns are replayed through the env like any other
turn, so the observations and the reward are the env's own; they are marked `forced` and
never trained on (`Trajectory.loss_mask`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from agent.rollout.policies.base import Policy
from agent.rollout.react import ChatFormat, Generation, TurnRequest
from agent.rollout.trajectory import Trajectory, read_trajectories
from wikisim.env.tasks import TaskSet
from wikisim.errors import ConfigError

#: the file in a GRPO run folder that keeps the episodes `own_starts` played
OWN_EPISODES = "own_starts.jsonl"

#: task id -> the teacher's turn texts before its answer
Starts = Mapping[str, tuple[str, ...]]


def _start_episodes(trajectories: Iterable[Trajectory]) -> dict[str, Trajectory]:
    """Per task id, its first answered episode with turns before the answer: the one it starts from."""
    out: dict[str, Trajectory] = {}
    for t in trajectories:
        if t.task_id not in out and t.answer is not None and len(t.turns) > 1:
            out[t.task_id] = t
    return out


def teacher_starts(trajectories: Iterable[Trajectory]) -> dict[str, tuple[str, ...]]:
    """Per task id, the turns before the answer of its first answered episode that has any."""
    return {
        tid: tuple(u.text for u in t.turns[:-1]) for tid, t in _start_episodes(trajectories).items()
    }


def own_starts(trajectories: Iterable[Trajectory]) -> dict[str, tuple[str, ...]]:
    """`teacher_starts` of the policy's own episodes whose searches put a gold answer on screen
    (`metrics["retrieved"]`, set by the sampler): from there, what is left is reading it off."""
    return teacher_starts(t for t in trajectories if t.metrics.get("retrieved"))


def own_start_summary(played: Sequence[Trajectory]) -> dict[str, int]:
    """What a run's own episodes gave GRPO: how many were played, how many questions start
    (`own_starts`), and how many of the episodes they start from were already right."""
    firsts = _start_episodes(t for t in played if t.metrics.get("retrieved"))
    return {
        "played": len(played),
        "started": len(firsts),
        "right_then": sum(t.metrics.get("em", 0.0) == 1.0 for t in firsts.values()),
    }


def read_starts(path: str | Path) -> dict[str, tuple[str, ...]]:
    """`teacher_starts` of a trajectories file (e.g. the rejection-sampled SFT data)."""
    if not Path(path).is_file():
        raise ConfigError(f"teacher_data={str(path)!r} is not a file of trajectories")
    starts = teacher_starts(read_trajectories(path))
    if not starts:
        raise ConfigError(f"teacher_data={str(path)!r} holds no answered multi-turn episode")
    return starts


def pick_starts(questions: Sequence[str], starts: Starts, share: float, seed: int) -> Starts:
    """The step's questions whose groups start from the teacher: each with probability `share`
    (one seeded draw per question, so the choice depends only on the seed and the questions)."""
    rng = random.Random(seed)
    draws = [rng.random() for _ in questions]
    return {
        q: starts[q] for q, u in zip(questions, draws, strict=True) if u < share and q in starts
    }


class StartedPolicy:
    """`policy`, except that an episode of a started question replays the teacher's turns first.

    Turn i < len(start) of such an episode is the teacher's text, as a forced `Generation`; the
    policy plays every other turn. A request is matched by its question (a request carries what
    a model sees, not task ids), so every task of `tasks` asking a started question starts.
    """

    def __init__(self, policy: Policy, tasks: TaskSet, starts: Starts) -> None:
        self.policy = policy
        self.name = policy.name
        self.starts = {tasks.get(tid).question: start for tid, start in starts.items()}

    @property
    def chat(self) -> ChatFormat | None:
        return self.policy.chat

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        out: list[Generation | None] = [None] * len(requests)
        own = []
        for i, r in enumerate(requests):
            start = self.starts.get(r.question, ())
            if r.turn < len(start):
                out[i] = Generation(text=start[r.turn], forced=True)
            else:
                own.append(i)
        if own:
            for i, g in zip(own, self.policy.act([requests[i] for i in own]), strict=True):
                out[i] = g
        return [g for g in out if g is not None]
