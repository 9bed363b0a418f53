"""Advantages and losses against values worked out by hand on tiny batches."""

from __future__ import annotations

import math

import pytest
import torch

from agent.train.losses import (
    apply_format_penalty,
    conservative_include,
    kept_logprobs_entropy,
    kept_positions,
    leave_one_out_advantages,
    masked_nll,
    policy_gradient_loss,
    std_normalized_advantages,
    token_logprobs,
)
from wikisim.errors import ConfigError


def test_leave_one_out_by_hand():
    # group 1: [1, 0, 0, 0] -> 1 - 0 = 1 ; 0 - 1/3 ; group 2: [1, 1, 0, 1] -> 1 - 2/3, 0 - 1
    r = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 1])
    a = leave_one_out_advantages(r, 4)
    expected = torch.tensor([1, -1 / 3, -1 / 3, -1 / 3, 1 / 3, 1 / 3, -1, 1 / 3])
    assert torch.allclose(a, expected)
    # all-equal groups give no signal
    assert torch.equal(leave_one_out_advantages(torch.ones(4), 2), torch.zeros(4))


def test_leave_one_out_rejects_bad_groups():
    with pytest.raises(ConfigError, match="groups of 3"):
        leave_one_out_advantages(torch.zeros(4), 3)
    with pytest.raises(ConfigError, match="group_size >= 2"):
        leave_one_out_advantages(torch.zeros(4), 1)


def test_std_normalized_by_hand():
    # [1,0,0,0]: mean 0.25, unbiased std sqrt((0.5625 + 3*0.0625)/3) = 0.5
    a = std_normalized_advantages(torch.tensor([1.0, 0, 0, 0]), 4, eps=0.0)
    assert torch.allclose(a, torch.tensor([1.5, -0.5, -0.5, -0.5]))


def test_conservative_include():
    truncated = torch.tensor([False, True, True, False])
    answered = torch.tensor([True, False, True, False])
    # only "truncated without an answer" is left out; an unanswered but not truncated ending stays
    assert conservative_include(truncated, answered).tolist() == [True, False, True, True]


def _batch():
    # seq 0: 3 policy tokens, advantage +1 ; seq 1: 1 policy token (plus an observation token), advantage -1
    logp = torch.tensor([[-1.0, -2.0, -0.5, 0.0], [-0.3, -0.7, -0.1, 0.0]], requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0], [0, 1, 0, 0]])
    adv = torch.tensor([1.0, -1.0])
    return logp, mask, adv


def test_token_level_loss_and_gradient_by_hand():
    logp, mask, adv = _batch()
    out = policy_gradient_loss(logp, adv, mask, torch.tensor([True, True]), aggregation="token")
    # -(1*3 - 1*1) / 4 policy tokens
    assert out.loss.item() == pytest.approx(-0.5)
    out.loss.backward()
    expected = torch.tensor([[-0.25, -0.25, -0.25, 0.0], [0.0, 0.25, 0.0, 0.0]])
    assert torch.equal(logp.grad, expected)


def test_sequence_mean_loss_differs_by_hand():
    logp, mask, adv = _batch()
    out = policy_gradient_loss(logp, adv, mask, torch.tensor([True, True]), aggregation="sequence")
    # per sequence first: (-1 + 1) / 2 = 0 ; grads -1/3/2 per token of seq 0, +1/2 for seq 1
    assert out.loss.item() == pytest.approx(0.0)
    out.loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-1 / 6, -1 / 6, -1 / 6, 0], [0, 0.5, 0, 0]]))


def test_truncated_negative_is_left_out():
    logp, mask, adv = _batch()
    include = conservative_include(torch.tensor([False, True]), torch.tensor([True, False]))
    out = policy_gradient_loss(logp, adv, mask, include)
    assert out.loss.item() == pytest.approx(-1.0)  # -(3 * 1) / 3 tokens of seq 0 only
    out.loss.backward()
    assert torch.equal(logp.grad[1], torch.zeros(4))


def test_global_token_normalizer_splits_over_micro_batches():
    logp, mask, adv = _batch()
    inc = torch.tensor([True, True])
    whole = policy_gradient_loss(logp, adv, mask, inc).loss
    parts = sum(
        policy_gradient_loss(
            logp[i : i + 1], adv[i : i + 1], mask[i : i + 1], inc[i : i + 1], token_normalizer=4.0
        ).loss
        for i in range(2)
    )
    assert parts.item() == pytest.approx(whole.item())


def test_clipping_by_hand():
    logp = torch.log(torch.tensor([[0.5, 0.5]])).requires_grad_()
    old = torch.log(torch.tensor([[0.25, 0.5]]))  # ratio 2 on the first token, 1 on the second
    out = policy_gradient_loss(
        logp,
        torch.tensor([1.0]),
        torch.ones(1, 2),
        torch.tensor([True]),
        old_logprobs=old,
        clip_eps=0.2,
    )
    # token 1 clipped to 1.2 (no gradient), token 2 ratio 1
    assert out.loss.item() == pytest.approx(-(1.2 + 1.0) / 2)
    assert out.clip_fraction.item() == pytest.approx(0.5)
    out.loss.backward()
    assert logp.grad[0, 0].item() == 0.0 and logp.grad[0, 1].item() == pytest.approx(-0.5)


def test_kl_term_by_hand():
    logp = torch.tensor([[math.log(0.5)]], requires_grad=True)
    ref = torch.tensor([[math.log(0.25)]])
    out = policy_gradient_loss(
        logp,
        torch.tensor([0.0]),
        torch.ones(1, 1),
        torch.tensor([True]),
        ref_logprobs=ref,
        kl_coef=0.1,
    )
    k3 = 0.5 - math.log(0.5) - 1  # exp(d) - d - 1 with d = log(0.25/0.5)
    assert out.kl.item() == pytest.approx(k3)
    assert out.loss.item() == pytest.approx(0.1 * k3)
    with pytest.raises(ConfigError, match="ref_logprobs"):
        policy_gradient_loss(
            logp, torch.tensor([0.0]), torch.ones(1, 1), torch.tensor([True]), kl_coef=0.1
        )


def test_token_logprobs_entropy_nll():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [0.0, 0.0]]])
    ids = torch.tensor([[1, 0, 1]])
    lp = token_logprobs(logits, ids)
    assert torch.allclose(lp, torch.tensor([[math.log(0.5), math.log(0.25)]]))
    keep = kept_positions(torch.tensor([[1.0, 0.0]]))
    assert keep.tolist() == [[True, False, False]]
    kept_lp, ent = kept_logprobs_entropy(logits[0][keep[0]], ids, keep)
    assert torch.allclose(kept_lp, torch.tensor([[math.log(0.5), 0.0]]))
    assert ent[0, 0].item() == pytest.approx(math.log(2)) and ent[0, 1].item() == 0.0
    assert masked_nll(lp, torch.tensor([[1, 1]])).item() == pytest.approx(
        -(math.log(0.5) + math.log(0.25)) / 2
    )


def test_format_penalty():
    r = apply_format_penalty(torch.tensor([1.0, 0.0]), torch.tensor([True, False]), 0.5)
    assert r.tolist() == [1.0, -0.5]
