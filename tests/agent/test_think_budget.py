"""Budget forcing (`SamplingConfig.think_budget`): a think still open at its budget is given
`</think>`, the turn goes on in the policy's own tokens, and the given ids are never trained on."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from agent.eval.harness import EvalConfig, evaluate
from agent.rollout.models import load_local
from agent.rollout.policies.transformers_policy import (
    THINK_CLOSE,
    SamplingConfig,
    TransformersPolicy,
    _Rows,
)
from agent.rollout.react import ChatFormat, Generation
from agent.rollout.trajectory import Trajectory, Turn
from agent.train.config import GRPOConfig
from wikisim.env.config import EnvConfig
from wikisim.errors import ConfigError
from wikisim.paths import DATA_DIR

ADAPTER = DATA_DIR / "models" / "smollm2-wikisim-lora"  # the shipped SFT policy: it thinks first
SYSTEM = (
    "You are a research assistant. Search, read the pages that matter, then give the final "
    "answer, as short as possible, enclosed in <answer></answer> tags.\n"
    'Call a tool as <tool_call>\n{"name": <tool>, "arguments": {...}}\n</tool_call>. Tools:\n'
    'search {"query": string}: web search\nvisit {"url": string, "goal": string}: read a page'
)
BUDGET = 10


@pytest.fixture(scope="module")
def smol():
    return load_local(ADAPTER)


def _sample(smol, budget: int, fixed: bool) -> list[tuple[list[int], list[float], tuple]]:
    tok, model = smol
    chat = ChatFormat(tok)
    prompt = chat.prompt_ids(
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Who produced the song Freak the Freak Out?"},
        ],
        None,
    )
    sampling = SamplingConfig(
        temperature=1.0, batch_size=3, fixed_shapes=fixed, think_budget=budget
    )
    policy = TransformersPolicy(tok, model, sampling=sampling)
    return policy.generate([list(prompt)] * 3, [24] * 3, [11, 12, 13])


@pytest.mark.parametrize("fixed", [False, True])
def test_a_think_past_its_budget_is_closed_and_the_turn_goes_on(smol, fixed: bool) -> None:
    tok, _ = smol
    close = tok.encode(THINK_CLOSE, add_special_tokens=False)
    free = _sample(smol, 0, fixed)
    forced = _sample(smol, BUDGET, fixed)
    for (ids, lps, at), (free_ids, _, free_at) in zip(forced, free, strict=True):
        assert free_at == ()
        head = tok.decode(free_ids[:BUDGET])
        assert "<think>" in head and "</think>" not in head  # the premise: it thinks at length
        assert ids[:BUDGET] == free_ids[:BUDGET]  # nothing changes before the budget
        assert at == tuple(range(BUDGET, BUDGET + len(close)))
        assert ids[BUDGET : BUDGET + len(close)] == close
        assert len(ids) > BUDGET + len(close)  # then the policy writes its call or answer
        assert tok.decode(ids).count("</think>") == 1
        assert all(math.isfinite(x) and x <= 0 for x in lps) and len(lps) == len(ids)
    if fixed:  # both decode loops give the same rows
        growing = _sample(smol, BUDGET, False)
        assert [r[0] for r in growing] == [r[0] for r in forced]
        assert [r[2] for r in growing] == [r[2] for r in forced]


@pytest.mark.parametrize(
    ("text", "owed"),
    [
        ("<think>\nKnown.\n</think>\nSo the answer is, I think, <think>", True),
        ("<think>\nKnown.\n</think>\nSo the answer is, I think, known", False),
        ("Let me look this up before I answer it properly <think>", True),
        ("<think>\nThe page names its producer and more", True),
    ],
)
def test_the_budget_is_the_turns_a_think_opened_past_it_is_closed(
    smol, text: str, owed: bool
) -> None:
    tok, model = smol
    policy = TransformersPolicy(tok, model, sampling=SamplingConfig(think_budget=BUDGET))
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) > BUDGET  # the premise: the think opens (or stays open) past the budget
    rows = _Rows(1)
    for t in ids:
        assert policy._add(rows, 0, t, -1.0, 128)
        if rows.owed:  # closed at once: the last id opened the think (or reached the budget)
            break
    assert rows.owed == ({0: tok.encode(THINK_CLOSE, add_special_tokens=False)} if owed else {})


def test_given_ids_are_out_of_the_loss_and_survive_a_round_trip() -> None:
    turn = Turn(text="ab", ids=(5, 6, 7, 8), logprobs=(-1.0,) * 4, forced_at=(1, 2))
    traj = Trajectory(
        task_id="q",
        seed=0,
        policy="p",
        prompt_ids=(1, 2),
        turns=(turn, Turn(text="c", ids=(9,), logprobs=(-0.5,))),
        answer="x",
        reward=1.0,
        terminated=True,
        truncated=False,
        manifest_hash="",
        version="0",
    )
    assert traj.loss_mask() == [0, 0, 1, 0, 0, 1, 1]
    assert Trajectory.from_dict(traj.canonical() | {"timings": {}}) == traj
    old = traj.canonical() | {"timings": {}}  # written before forced_at existed
    old["turns"] = [{k: v for k, v in t.items() if k != "forced_at"} for t in old["turns"]]
    assert Trajectory.from_dict(old).turns[0].forced_at == ()
    with pytest.raises(ValueError, match="outside"):
        Turn(text="a", ids=(1,), logprobs=(0.0,), forced_at=(1,))
    with pytest.raises(ValueError, match="outside"):
        Generation(text="a", forced_at=(0,))
    with pytest.raises(ConfigError, match="think_budget=-1"):
        SamplingConfig(think_budget=-1)
    with pytest.raises(ConfigError, match="think_budget=48 is applied by the in-process sampler"):
        GRPOConfig(think_budget=48, generation_server="http://127.0.0.1:8000/v1")


def test_an_evaluated_episode_records_where_its_thinks_were_closed(
    sample_index: Path, smol
) -> None:
    tok, model = smol
    env = EnvConfig(index=str(sample_index), max_turns=2, prompt="compact", search_k=2)
    cfg = EvalConfig(policy=str(ADAPTER), env=env, limit=2, envs=2, think_budget=BUDGET)
    policy = TransformersPolicy(
        tok, model, sampling=SamplingConfig(batch_size=2, think_budget=BUDGET)
    )
    summary, trajs = evaluate(cfg, policy=policy, progress=False)
    close = tok.encode(THINK_CLOSE, add_special_tokens=False)
    given = [(t, u) for t in trajs for u in t.turns if u.forced_at]
    assert given  # the shipped policy thinks for more than ten tokens
    for t, u in given:
        assert [u.ids[j] for j in u.forced_at] == close
        start = len(t.prompt_ids) + sum(
            len(v.ids) + len(v.observation_ids) for v in t.turns[: t.turns.index(u)]
        )
        mask = t.loss_mask()
        assert [mask[start + j] for j in range(len(u.ids))] == [
            int(j not in u.forced_at) for j in range(len(u.ids))
        ]
    assert summary["episodes"] == 2
    assert summary["think_closes"] == sum(bool(u.forced_at) for t in trajs for u in t.turns) / 2
