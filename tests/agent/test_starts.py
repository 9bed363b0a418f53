"""Teacher starts for GRPO: which turns are replayed, which questions start, what the loss sees."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest

from agent.rollout.react import Generation, TurnRequest
from agent.rollout.trajectory import Trajectory, Turn, write_trajectories
from agent.train.config import GRPOConfig
from agent.train.episodes import drawn
from agent.train.grpo import train_grpo
from agent.train.starts import (
    StartedPolicy,
    own_start_summary,
    own_starts,
    pick_starts,
    read_starts,
    teacher_starts,
)
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import ConfigError


def episode(task_id: str, texts: list[str], answer: str | None = "a") -> Trajectory:
    turns = tuple(
        Turn(text=x, ids=(i,), logprobs=(0.0,), observation="o") for i, x in enumerate(texts)
    )
    return Trajectory(task_id, 0, "teacher", (9,), turns, answer, 1.0, True, False, "h", "v")


def test_a_start_is_the_first_answered_episodes_turns_before_its_answer(tmp_path):
    trajs = [
        episode("q1", ["answer"]),  # nothing before the answer: no start
        episode("q1", ["search", "visit", "answer"]),
        episode("q1", ["search", "answer"]),  # a later episode of the same question
        episode("q2", ["search", "answer"], answer=None),  # never answered
    ]
    assert teacher_starts(trajs) == {"q1": ("search", "visit")}
    write_trajectories(tmp_path / "t.jsonl", trajs)
    assert read_starts(tmp_path / "t.jsonl") == {"q1": ("search", "visit")}
    write_trajectories(tmp_path / "none.jsonl", trajs[:1])
    with pytest.raises(ConfigError, match="no answered multi-turn episode"):
        read_starts(tmp_path / "none.jsonl")
    with pytest.raises(ConfigError, match="not a file"):
        read_starts(tmp_path / "missing.jsonl")


def test_which_questions_start_depends_only_on_the_seed_and_the_share():
    starts = {f"q{i}": ("search",) for i in range(200)}
    questions = [*starts, "unknown"]
    assert pick_starts(questions, starts, 0.0, 1) == {}
    assert pick_starts(questions, starts, 1.0, 1) == starts
    half = pick_starts(questions, starts, 0.5, 1)
    assert half == pick_starts(questions, starts, 0.5, 1) != pick_starts(questions, starts, 0.5, 2)
    assert 70 < len(half) < 130 and "unknown" not in half


def test_a_started_episode_replays_the_teachers_turns_as_forced_then_asks_the_policy():
    tasks = TaskSet([Task("q1", "Who?", ("a",)), Task("q2", "What?", ("b",))])
    asked = []

    class Echo:
        name, chat = "echo", None

        def act(self, requests):
            asked.extend(r.turn for r in requests)
            return [Generation(text=f"own {r.turn}") for r in requests]

    policy = StartedPolicy(Echo(), tasks, {"q1": ("search", "visit")})

    def req(q: str, turn: int) -> TurnRequest:
        return TurnRequest(
            ({"role": "system", "content": ""}, {"role": "user", "content": q}), (), 8, 0, turn
        )

    out = policy.act([req("Who?", 0), req("What?", 0), req("Who?", 1), req("Who?", 2)])
    assert [(g.text, g.forced) for g in out] == [
        ("search", True),
        ("own 0", False),
        ("visit", True),
        ("own 2", False),
    ]
    assert asked == [0, 2] and policy.name == "echo"


def test_forced_turns_are_outside_the_loss_mask():
    t = episode("q1", ["search", "answer"])
    forced = dataclasses.replace(
        t, turns=(dataclasses.replace(t.turns[0], forced=True), t.turns[1])
    )
    assert t.loss_mask() == [0, 1, 1] and forced.loss_mask() == [0, 0, 1]
    assert Trajectory.from_dict(forced.canonical() | {"timings": {}}) == forced


def test_teacher_starts_need_a_share_and_a_file():
    with pytest.raises(ConfigError, match="teacher_data"):
        GRPOConfig(teacher_starts=0.5)
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        GRPOConfig(teacher_starts=1.5, teacher_data="x.jsonl")


def test_own_starts_are_the_episodes_whose_searches_showed_a_gold_answer():
    shown = dataclasses.replace(episode("q1", ["search", "answer"]), metrics={"retrieved": 1.0})
    unseen = dataclasses.replace(episode("q2", ["search", "answer"]), metrics={"retrieved": 0.0})
    unmarked = episode("q3", ["search", "answer"])
    assert own_starts([unseen, shown, unmarked]) == {"q1": ("search",)}
    right = dataclasses.replace(shown, task_id="q4", metrics={"retrieved": 1.0, "em": 1.0})
    direct = dataclasses.replace(right, task_id="q5", turns=right.turns[-1:])  # no turn before
    unread = dataclasses.replace(right, task_id="q6", metrics={"retrieved": 0.0, "em": 1.0})
    assert own_start_summary([unseen, shown, unmarked, right, direct, unread]) == {
        "played": 6,
        "started": 2,  # q1 and q4
        "right_then": 1,  # q4: right answers it was never shown, or gave at once, start nothing
    }
    with pytest.raises(ConfigError, match="own_starts=-1"):
        GRPOConfig(own_starts=-1)
    with pytest.raises(ConfigError, match=r"own_share=1.5 must be a share in \[0, 1\]"):
        GRPOConfig(own_starts=8, own_share=1.5)
    with pytest.raises(ConfigError, match="own_share=0.75 .* set own_starts"):
        GRPOConfig(
            own_share=0.75
        )  # ignored without own starts: an error rather than a silent no-op
    with pytest.raises(ConfigError, match="not both"):
        GRPOConfig(own_starts=8, teacher_starts=0.5, teacher_data="x.jsonl")


def test_an_even_draw_takes_one_from_each_source_in_turn():
    """learn_agent's training files are 447 synthesized questions and ~150 human-written: a
    proportional draw of 48 held 4 to 11 human-written ones (session 43)."""
    sources = {
        **{f"s{i:02d}": "synth.jsonl" for i in range(30)},
        **{f"h{i}": "hotpot.json[:70]" for i in range(4)},
        **{f"m{i}": "musique.json[:70]" for i in range(6)},
    }
    ids = list(sources)
    even = drawn(ids, 12, 7, sources)
    assert Counter(sources[t] for t in even) == {
        "synth.jsonl": 4,
        "hotpot.json[:70]": 4,
        "musique.json[:70]": 4,
    }
    assert drawn(ids[::-1], 12, 7, sources) == even  # whatever order they are listed in
    assert drawn(ids, 12, 8, sources) != even  # the seed draws
    # a source that runs out leaves its turns to the others
    assert Counter(sources[t] for t in drawn(ids, 20, 7, sources)) == {
        "synth.jsonl": 10,
        "hotpot.json[:70]": 4,
        "musique.json[:70]": 6,
    }
    assert sorted(drawn(ids, 99, 7, sources)) == sorted(ids)
    # without sources, the proportional draw of every earlier run, to the id
    plain = sorted(ids)
    random.Random(7).shuffle(plain)
    assert drawn(ids, 12, 7) == plain[:12]
    with pytest.raises(ConfigError, match="no source given for 1 task ids, e.g. 'x'"):
        drawn([*ids, "x"], 12, 7, sources)
    with pytest.raises(ConfigError, match="even_sources .* set own_starts"):
        GRPOConfig(even_sources=True)
    with pytest.raises(ConfigError, match="even_sources: give train_grpo the source"):
        train_grpo(GRPOConfig(own_starts=4, even_sources=True), ids, sampler=None)  # type: ignore[arg-type]
