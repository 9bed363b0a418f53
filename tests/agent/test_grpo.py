"""GRPO update: advantages and exclusion from trajectories, exact zero gradient off the policy tokens."""

from __future__ import annotations

import pytest
import torch
from test_sft import make_traj

from agent.rollout.models import tiny_model
from agent.train.config import GRPOConfig
from agent.train.curriculum import Curriculum, CurriculumConfig
from agent.train.grpo import (
    advantages_for,
    grpo_update,
    question_pass_rates,
    rollout_stats,
    sample_pass_rates,
)
from agent.train.loop import collate, make_accelerator, make_optimizer
from agent.train.losses import conservative_include, policy_gradient_loss, token_logprobs


@pytest.fixture(scope="module")
def tok():
    return tiny_model(0)[0]


def group(tok, rewards, truncated=()):
    return [
        make_traj(tok, "q", f"a{i}", reward=r, truncated=i in truncated, seed=i)
        for i, r in enumerate(rewards)
    ]


def test_advantages_and_conservative_exclusion(tok, tmp_path):
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0], truncated=(3,))
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    adv, inc = advantages_for(trajs, cfg)
    assert torch.allclose(adv, torch.tensor([1, -1 / 3, -1 / 3, -1 / 3]))
    assert inc.tolist() == [True, True, True, False]
    adv2, _ = advantages_for(
        trajs,
        GRPOConfig(output_dir=str(tmp_path), group_size=4, advantage="std_normalized", cpu=True),
    )
    assert adv2[0].item() == pytest.approx(1.5, rel=1e-3)
    _, inc_all = advantages_for(
        trajs, GRPOConfig(output_dir=str(tmp_path), group_size=4, exclude_truncated=False, cpu=True)
    )
    assert inc_all.all()
    pen, _ = advantages_for(
        trajs, GRPOConfig(output_dir=str(tmp_path), group_size=4, format_penalty=1.0, cpu=True)
    )
    # the truncated rollout has no answer: reward -1, so the others' baseline drops by 1/3
    assert pen[3].item() == pytest.approx(-1 - 1 / 3)


def test_observation_and_excluded_tokens_get_exactly_zero_gradient(tok):
    _, model = tiny_model(0)
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0], truncated=(3,))
    batch = collate(trajs, tok.pad_token_id)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logits.retain_grad()
    adv = torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3])
    inc = conservative_include(
        torch.tensor([False, False, False, True]), torch.tensor([True, True, True, False])
    )
    policy_gradient_loss(
        token_logprobs(logits, batch.input_ids), adv, batch.loss_mask, inc
    ).loss.backward()
    g = logits.grad[:, :-1]
    assert torch.count_nonzero(g[batch.loss_mask == 0]) == 0  # prompt, observations, padding
    assert torch.count_nonzero(g[3]) == 0  # the truncated negative
    assert torch.count_nonzero(g[0][batch.loss_mask[0] == 1]) > 0


def test_update_is_token_level_over_the_batch(tok, tmp_path):
    """The loss reported equals the hand formula -(sum_i A_i * n_i) / sum_i n_i at ratio 1."""
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=2, micro_batch_size=1, cpu=True, lr=1e-3)
    trajs = [
        make_traj(tok, "q", "Paris", reward=1.0),
        make_traj(tok, "q", "Algeria and Andorra", reward=0.0),
    ]
    acc = make_accelerator(cfg)
    _, model = tiny_model(0)
    opt, sched = make_optimizer(cfg, model, 1)
    model, opt, sched = acc.prepare(model, opt, sched)
    n = [sum(t.loss_mask()) for t in trajs]
    before = [p.detach().clone() for p in model.parameters()]
    out = grpo_update(model, opt, sched, acc, trajs, cfg, tok.pad_token_id)
    assert out["loss"] == pytest.approx(-(1 * n[0] - 1 * n[1]) / (n[0] + n[1]), abs=1e-6)
    assert out["policy_tokens"] == sum(n) and out["excluded_truncated"] == 0
    assert out["entropy"] > 0 and out["grad_norm"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_rollout_stats_and_sample_pass_rates(tok):
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0], truncated=(3,))
    s = rollout_stats(trajs)
    assert (
        s["n"] == 4 and s["solve_rate"] == 1 and s["truncated_share"] == 1 and s["tool_calls"] == 4
    )
    p1, pk, nq = sample_pass_rates(trajs, 2)
    assert (p1, pk, nq) == (0.25, 0.5, 2)


def test_probed_pass_rates_start_the_curriculum_on_questions_sometimes_solved(tok):
    rewards = {"never": [0.0, 0.0, 0.5], "half": [1.0, 0.0, 1.0], "always": [1.0, 1.0, 1.0]}
    trajs = [
        make_traj(tok, q, "x", reward=r, seed=i)
        for q, rs in rewards.items()
        for i, r in enumerate(rs)
    ]
    rates = question_pass_rates(trajs, 3)
    assert rates == {
        "never": 0.0,
        "half": pytest.approx(2 / 3),
        "always": 1.0,
    }  # F1 0.5 is no solve
    cur = Curriculum(list(rates), CurriculumConfig(pool_size=3), prior=rates)
    assert cur.pool == ["half"] and sorted(cur.skipped) == ["always", "never"]
