"""pass@k and the summary numbers against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from agent.eval.metrics import (
    accuracy_by_turn_budget,
    breakdowns,
    intervals,
    pass_at_k,
    pass_at_ks,
    summarize,
    tool_calls,
)
from agent.rollout.trajectory import Trajectory, Turn
from wikisim.errors import ConfigError


def test_pass_at_k_matches_hand_computed_values() -> None:
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(5, 2, 1) == pytest.approx(2 / 5)
    # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # 1 - C(7,3)/C(10,3) = 1 - 35/120
    assert pass_at_k(10, 3, 3) == pytest.approx(1 - 35 / 120)
    assert pass_at_k(4, 2, 3) == 1.0  # fewer than k wrong samples: always a hit
    assert pass_at_k(200, 10, 100) == pytest.approx(1 - math.comb(190, 100) / math.comb(200, 100))
    with pytest.raises(ConfigError, match="k=6"):
        pass_at_k(5, 1, 6)


def _traj(
    task: str, seed: int, em: float, tools: tuple[str, ...] = ("search",), n_turns: int = 2
) -> Trajectory:
    turns = tuple(
        Turn(
            text="t",
            ids=(1, 2),
            logprobs=(-0.1, -0.2),
            observation="o",
            observation_ids=(3,),
            tool_calls=tools if i < n_turns - 1 else (),
        )
        for i in range(n_turns)
    )
    return Trajectory(
        task_id=task,
        seed=seed,
        policy="p",
        prompt_ids=(0,) * 4,
        turns=turns,
        answer="a",
        reward=em,
        terminated=True,
        truncated=False,
        manifest_hash="h",
        version="0",
        metrics={"em": em, "f1": 0.5 + em / 2},
    )


def test_summary_pools_seeds_and_tasks() -> None:
    # task a: 2 of 3 seeds right; task b: 0 of 3
    trajs = [_traj("a", s, float(s < 2)) for s in range(3)] + [
        _traj("b", s, 0.0, ("visit", "search"), 3) for s in range(3)
    ]
    ks = pass_at_ks(trajs)
    assert ks[1] == pytest.approx((2 / 3 + 0) / 2)
    assert ks[2] == pytest.approx((1.0 + 0) / 2)  # 1 - C(1,2)/C(3,2) = 1
    ci = intervals(trajs)["pass@1"]
    assert ci["mean"] == pytest.approx(2 / 6) and ci["n"] == 2  # two tasks, not six episodes
    # a bootstrap over two tasks (means 2/3 and 0) draws (a,a), (a,b), (b,b): its ends are 0 and 2/3
    assert (ci["low"], ci["high"]) == (pytest.approx(0.0), pytest.approx(2 / 3))
    s = summarize(trajs)
    assert s["intervals"]["em"] == ci and s["pass@1"] == pytest.approx(2 / 6)
    assert s["pass@k_intervals"]["2"]["mean"] == pytest.approx(0.5)
    assert (s["episodes"], s["tasks"], s["seeds"]) == (6, 2, 3)
    assert s["em"] == pytest.approx(2 / 6) and s["turns"] == pytest.approx(2.5)
    assert s["generated_tokens"] == pytest.approx(5.0) and s["prompt_tokens"] == 4
    assert tool_calls(trajs) == {"search": pytest.approx(1.5), "visit": pytest.approx(1.0)}
    assert accuracy_by_turn_budget(trajs, [1, 2, 3]) == {
        1: 0.0,
        2: pytest.approx(2 / 6),
        3: pytest.approx(2 / 6),
    }
    by = breakdowns(trajs, {"a": {"hops": 1}, "b": {"hops": 2, "source": "x"}})
    assert by["hops"]["1"] == {
        "episodes": 3,
        "tasks": 1,
        "em": pytest.approx(2 / 3),
        "em_low": pytest.approx(2 / 3),
        "em_high": pytest.approx(2 / 3),
        "f1": pytest.approx(5 / 6),
    }
    assert by["hops"]["2"]["em"] == 0.0 and by["hops"]["2"]["f1"] == 0.5
    assert list(by["source"]) == ["x"]
    kinds = breakdowns(
        trajs, {"a": {"uncertainty": ["fuzzy", "obfuscated"]}, "b": {"uncertainty": ["fuzzy"]}}
    )
    assert {k: v["episodes"] for k, v in kinds["uncertainty"].items()} == {
        "fuzzy": 6,
        "obfuscated": 3,
    }
