"""GRPO update: advantages and exclusion from trajectories, exact zero gradient off the policy tokens."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import grpo_worker
import pytest
import torch
from test_sft import make_traj

import agent.train.grpo as grpo
from agent.rollout.models import tiny_model
from agent.rollout.trajectory import read_trajectories
from agent.train.config import GRPOConfig
from agent.train.curriculum import Curriculum, CurriculumConfig
from agent.train.grpo import (
    _micro_batch_loss,
    advantages_for,
    grpo_update,
    probe_start,
    rollout_stats,
    sample_pass_rates,
    unsearched,
)
from agent.train.loop import collate, make_accelerator, make_optimizer
from agent.train.losses import (
    conservative_include,
    kept_logprobs_entropy,
    kept_positions,
    policy_gradient_loss,
    token_logprobs,
)
from wikisim.errors import ConfigError


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


def test_a_rollout_that_searched_until_its_turns_ran_out_can_be_a_negative(tok, tmp_path):
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0], truncated=(2, 3))

    def last_turn_calls(t, calls):
        return dataclasses.replace(
            t, turns=(*t.turns[:-1], dataclasses.replace(t.turns[-1], tool_calls=calls))
        )

    trajs[2] = last_turn_calls(trajs[2], ("?",))  # its last turn was cut: no call parsed
    trajs[3] = last_turn_calls(trajs[3], ("visit",))  # every turn a call, never an answer
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    _, conservative = advantages_for(trajs, cfg)
    assert conservative.tolist() == [True, True, False, False]
    adv, inc = advantages_for(trajs, dataclasses.replace(cfg, unanswered_negative=True))
    assert inc.tolist() == [True, True, False, True]  # the cut one stays out
    assert adv[3].item() == pytest.approx(-1 / 3)  # pushed down as a wrong answer is


def test_a_rollout_that_ran_out_on_refused_turns_can_be_a_negative(tok, tmp_path):
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0], truncated=(1, 2, 3))
    search = '<tool_call>\n{"name": "search", "arguments": {"query": "q"}}\n</tool_call>'

    def turns(t, *texts_calls):
        return dataclasses.replace(
            t,
            turns=tuple(
                dataclasses.replace(u, text=text, tool_calls=calls)
                for u, (text, calls) in zip(t.turns, texts_calls, strict=True)
            ),
        )

    forged = "<think>q is a.</think>\n<tool_response>"  # the turn ends where the policy forged it
    trajs[1] = turns(trajs[1], (search, ("search",)), (forged, ("?",)))
    trajs[2] = turns(trajs[2], (search, ("search",)), ("<think>q is " + "a " * 60, ("?",)))
    trajs[3] = turns(trajs[3], (search, ("search",)), (search, ("search",)))
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    assert advantages_for(trajs, cfg)[1].tolist() == [True, False, False, False]
    searched = dataclasses.replace(cfg, unanswered_negative=True)
    assert advantages_for(trajs, searched)[1].tolist() == [True, False, False, True]
    adv, inc = advantages_for(trajs, dataclasses.replace(cfg, refused_negative=True))
    assert inc.tolist() == [True, True, False, True]  # the turn the token limit cut stays out
    assert adv[1].item() == pytest.approx(-1 / 3)  # pushed down as a wrong answer is


def test_grounded_only_gives_no_reward_to_an_answer_never_observed(tok, tmp_path):
    trajs = group(tok, [1.0, 1.0, 0.0, 0.0])
    first = trajs[1].turns[0]
    unread = dataclasses.replace(first, observation="No results.")
    trajs[1] = dataclasses.replace(trajs[1], turns=(unread, *trajs[1].turns[1:]))
    stats = rollout_stats(trajs)
    assert stats["grounded_share"] == 3.0  # sums; the step record divides by n
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    plain, _ = advantages_for(trajs, cfg)
    gated, _ = advantages_for(trajs, dataclasses.replace(cfg, grounded_only=True))
    assert torch.allclose(plain, torch.tensor([2 / 3, 2 / 3, -2 / 3, -2 / 3]))
    # rewards 1, 0, 0, 0: the recalled answer now counts as a wrong one
    assert torch.allclose(gated, torch.tensor([1, -1 / 3, -1 / 3, -1 / 3]))


def test_retrieval_bonus_pays_the_searching_that_put_a_gold_answer_on_screen(tok, tmp_path):
    # four wrong answers (reward 0); rollouts 0 and 1 found a gold answer, 2 and 3 did not
    trajs = [
        dataclasses.replace(t, metrics={**t.metrics, "retrieved": float(i < 2)})
        for i, t in enumerate(group(tok, [0.0, 0.0, 0.0, 0.0]))
    ]
    assert rollout_stats(trajs)["retrieved_share"] == 2.0
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    plain, _ = advantages_for(trajs, cfg)
    assert not plain.any()  # the answer reward alone ties: nothing to learn from this group
    paid, _ = advantages_for(trajs, dataclasses.replace(cfg, retrieval_bonus=0.25))
    assert torch.allclose(paid, torch.tensor([1, 1, -1, -1]) * 0.25 * 2 / 3)
    # a started rollout had the answer on screen before its own turns: finding it again earns nothing
    first = trajs[0].turns[0]
    trajs[0] = dataclasses.replace(
        trajs[0], turns=(dataclasses.replace(first, forced=True), *trajs[0].turns[1:])
    )
    again, _ = advantages_for(trajs, dataclasses.replace(cfg, retrieval_bonus=0.25))
    assert torch.allclose(again, torch.tensor([-1, 3, -1, -1]) * 0.25 / 3)
    # session 38's seed 2: a group whose rollouts mostly found the answer and then searched and
    # visited until their turns ran out; paid for the find, they outranked one that answered
    looped = [
        dataclasses.replace(t, metrics={**t.metrics, "retrieved": float(i in (1, 2))})
        for i, t in enumerate(group(tok, [0.0, 0.0, 0.0, 0.0], truncated=(1, 2, 3)))
    ]
    looped[1:] = [  # every turn a visit, none an answer
        dataclasses.replace(t, turns=(t.turns[0], dataclasses.replace(t.turns[0], text="visit")))
        for t in looped[1:]
    ]
    loop_cfg = dataclasses.replace(
        cfg, retrieval_bonus=0.25, format_penalty=0.1, unanswered_negative=True
    )
    adv, inc = advantages_for(looped, loop_cfg)
    assert inc.all()  # every turn a call: searched out, so a negative, not left out
    # rewards 0 (answered, wrong) and -0.1 (the format penalty) thrice: the find is not paid
    assert torch.allclose(adv, torch.tensor([3, -1, -1, -1]) * 0.1 / 3)
    unmarked = group(tok, [0.0, 0.0, 0.0, 0.0])  # a sampler that does not say what it retrieved
    with pytest.raises(ConfigError, match="retrieved"):
        advantages_for(unmarked, dataclasses.replace(cfg, retrieval_bonus=0.25))
    with pytest.raises(ConfigError, match="retrieval_bonus"):
        GRPOConfig(output_dir=str(tmp_path), retrieval_bonus=-0.1)


def test_echo_penalty_charges_a_wrong_answer_that_is_words_of_the_question(tok, tmp_path):
    # one right answer that the question names (a comparison's), a wrong echo, two wrong readings
    trajs = [
        dataclasses.replace(t, metrics={**t.metrics, "echo": float(i < 2)})
        for i, t in enumerate(group(tok, [1.0, 0.0, 0.0, 0.0]))
    ]
    assert rollout_stats(trajs)["echo_share"] == 1.0  # wrong echoes only
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    plain, _ = advantages_for(trajs, cfg)
    assert plain[1] == plain[2] == plain[3]  # every wrong answer alike
    charged, _ = advantages_for(trajs, dataclasses.replace(cfg, echo_penalty=0.1))
    rewards = torch.tensor([1.0, -0.1, 0.0, 0.0])  # the right one is not charged
    assert torch.allclose(charged, (rewards - rewards.mean()) * 4 / 3)
    with pytest.raises(ConfigError, match="metrics\\['echo'\\]"):
        advantages_for(group(tok, [1.0, 0.0, 0.0, 0.0]), dataclasses.replace(cfg, echo_penalty=0.1))
    with pytest.raises(ConfigError, match="echo_penalty"):
        GRPOConfig(output_dir=str(tmp_path), echo_penalty=-0.1)


def test_malformed_penalty_charges_a_rollout_that_made_a_call_the_env_could_not_run(tok, tmp_path):
    # a right answer, a wrong one after a visit without a URL, two clean wrong answers
    trajs = [
        dataclasses.replace(t, metrics={**t.metrics, "malformed": float(i == 1)})
        for i, t in enumerate(group(tok, [1.0, 0.0, 0.0, 0.0]))
    ]
    assert rollout_stats(trajs)["malformed_share"] == 1.0
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    plain, _ = advantages_for(trajs, cfg)
    assert plain[1] == plain[2] == plain[3]
    charged, _ = advantages_for(trajs, dataclasses.replace(cfg, malformed_penalty=0.1))
    rewards = torch.tensor([1.0, -0.1, 0.0, 0.0])
    assert torch.allclose(charged, (rewards - rewards.mean()) * 4 / 3)
    with pytest.raises(ConfigError, match="metrics\\['malformed'\\]"):
        advantages_for(
            group(tok, [1.0, 0.0, 0.0, 0.0]), dataclasses.replace(cfg, malformed_penalty=0.1)
        )
    with pytest.raises(ConfigError, match="malformed_penalty"):
        GRPOConfig(output_dir=str(tmp_path), malformed_penalty=-0.1)


def test_unsearched_penalty_charges_an_answer_given_without_a_search(tok, tmp_path):
    # a right answer after a search; a wrong one without a search; the same, started from a
    # replayed search; a wrong answer after a search
    trajs = group(tok, [1.0, 0.0, 0.0, 0.0])
    answer_only = trajs[1].turns[1:]
    trajs[1] = dataclasses.replace(trajs[1], turns=answer_only)
    replayed = dataclasses.replace(trajs[2].turns[0], forced=True)
    trajs[2] = dataclasses.replace(trajs[2], turns=(replayed, *trajs[2].turns[1:]))
    assert [unsearched(t) for t in trajs] == [False, True, False, False]
    assert rollout_stats(trajs)["unsearched_share"] == 1.0
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=4, cpu=True)
    charged, _ = advantages_for(trajs, dataclasses.replace(cfg, unsearched_penalty=0.1))
    rewards = torch.tensor([1.0, -0.1, 0.0, 0.0])
    assert torch.allclose(charged, (rewards - rewards.mean()) * 4 / 3)
    # an unanswered rollout is the format penalty's, not this one's
    cut = group(tok, [0.0, 0.0, 0.0, 0.0], truncated=(0,))
    cut[0] = dataclasses.replace(cut[0], turns=cut[0].turns[1:])
    assert not unsearched(cut[0])
    with pytest.raises(ConfigError, match="unsearched_penalty"):
        GRPOConfig(output_dir=str(tmp_path), unsearched_penalty=-0.1)


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


def _full_logits_loss(model, ref_model, batch, adv, include, kept_mask, cfg, n_tok, n_seq):
    """The loss as computed before kept positions: logits and log-softmax over every position."""
    ids, att = batch.input_ids, batch.attention_mask
    logits = model(input_ids=ids, attention_mask=att).logits
    logp = token_logprobs(logits, ids)
    ref = None
    if ref_model is not None:
        with torch.no_grad():
            ref = token_logprobs(ref_model(input_ids=ids, attention_mask=att).logits, ids)
    terms = policy_gradient_loss(
        logp,
        adv,
        batch.loss_mask,
        include,
        aggregation=cfg.aggregation,
        old_logprobs=batch.old_logprobs if cfg.clip_eps else None,
        clip_eps=cfg.clip_eps or None,
        ref_logprobs=ref,
        kl_coef=cfg.kl_coef,
        token_normalizer=n_tok,
        sequence_normalizer=n_seq,
    )
    lp = torch.log_softmax(logits[:, :-1].float(), -1)
    ent = -(lp.exp() * lp).sum(-1)
    loss = terms.loss - cfg.entropy_coef * (ent * kept_mask).sum() / n_tok
    return loss, logp, (ent * batch.loss_mask).sum()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"aggregation": "sequence", "clip_eps": 0.2},
        {"kl_coef": 0.1, "entropy_coef": 0.01},
    ],
)
def test_loss_at_kept_positions_equals_the_full_logits_loss(tok, tmp_path, settings):
    """The lm_head only at the policy's tokens gives the same log-probs, loss, entropy and gradient."""
    cfg = GRPOConfig(output_dir=str(tmp_path), group_size=3, cpu=True, **settings)
    trajs = [
        make_traj(tok, "q", "Paris", reward=1.0),
        make_traj(tok, "q", "Algeria and Andorra", reward=0.0, seed=1),
        make_traj(tok, "q", "x", reward=0.0, truncated=True, seed=2),
    ]
    _, model = tiny_model(0)
    _, ref_model = tiny_model(1) if cfg.kl_coef else (None, None)
    batch = collate(trajs, tok.pad_token_id)
    adv, include = advantages_for(trajs, cfg)
    kept_mask = batch.loss_mask * include.float().unsqueeze(1)
    n_tok, n_seq = float(kept_mask.sum()), float((kept_mask.sum(1) > 0).sum())
    assert not include.all() and len({len(t.token_ids()) for t in trajs}) > 1  # padding too
    full, full_logp, full_ent = _full_logits_loss(
        model, ref_model, batch, adv, include, kept_mask, cfg, n_tok, n_seq
    )
    full.backward()
    full_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    terms = _micro_batch_loss(
        model, ref_model, batch, slice(0, 3), adv, include, kept_mask, cfg, n_tok, n_seq
    )
    terms["loss"].backward()
    keep = kept_positions(batch.loss_mask)
    logits = model(input_ids=batch.input_ids, logits_to_keep=keep).logits
    assert logits.shape[0] == int(batch.loss_mask.sum()) < batch.loss_mask.numel() / 2
    logp = kept_logprobs_entropy(logits, batch.input_ids, keep)[0]
    assert torch.allclose(logp, full_logp * batch.loss_mask, atol=1e-6)
    assert terms["loss"].item() == pytest.approx(full.item(), abs=1e-6)
    assert terms["entropy"].item() == pytest.approx(full_ent.item(), rel=1e-5)
    for g_full, p in zip(full_grads, model.parameters(), strict=True):
        assert torch.allclose(p.grad, g_full, atol=1e-7, rtol=1e-4)


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


def test_an_update_out_of_memory_retries_at_half_the_micro_batch(tok, tmp_path):
    """On a device with room for 2 rows, 4-row micro-batches give the update 2-row ones give."""
    trajs = group(tok, [1.0, 0.0, 0.5, 0.0])

    def update(micro_batch: int, rows: int) -> tuple[dict, list[torch.Tensor]]:
        cfg = GRPOConfig(
            output_dir=str(tmp_path), group_size=4, micro_batch_size=micro_batch, cpu=True, lr=1e-3
        )
        acc = make_accelerator(cfg)
        _, model = tiny_model(0)

        def check(_, args, kwargs):
            if kwargs["input_ids"].shape[0] > rows:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

        model.register_forward_pre_hook(check, with_kwargs=True)
        opt, sched = make_optimizer(cfg, model, 1)
        model, opt, sched = acc.prepare(model, opt, sched)
        out = grpo_update(model, opt, sched, acc, trajs, cfg, tok.pad_token_id)
        return out, [p.detach().clone() for p in model.parameters()]

    (two, w2), (four, w4) = update(2, rows=4), update(4, rows=2)
    assert two["micro_batch"] == four["micro_batch"] == 2
    assert four["loss"] == two["loss"] and four["grad_norm"] == two["grad_norm"]
    assert all(torch.equal(a, b) for a, b in zip(w2, w4, strict=True))


@pytest.mark.parametrize(
    ("rewards", "runs"), [([1.0, 0.0, 0.5, 0.5, 1.0, 0.0], 3), ([1.0, 1.0, 0.0, 0.0, 0.0, 0.0], 0)]
)
def test_rows_that_add_nothing_are_not_run_and_the_update_is_the_same(
    tok, tmp_path, monkeypatch, rewards, runs
):
    """Groups of 2: one with equal rewards, one truncated without an answer (excluded); in the
    second case no row is left to run, and the update (after one that left momentum) is still
    the zero gradient's."""
    trajs = group(tok, rewards, truncated=(5,))
    trajs[5] = dataclasses.replace(trajs[5], answer=None)
    warm = group(tok, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])

    def update() -> tuple[dict, list[torch.Tensor], list[int]]:
        cfg = GRPOConfig(  # one forward per row run: no shared prefix pass
            output_dir=str(tmp_path),
            group_size=2,
            micro_batch_size=1,
            shared_prefix=False,
            cpu=True,
        )
        acc = make_accelerator(cfg)
        _, model = tiny_model(0)
        seen: list[int] = []
        model.register_forward_pre_hook(
            lambda _, args, kwargs: seen.append(kwargs["input_ids"].shape[0]), with_kwargs=True
        )
        opt, sched = make_optimizer(cfg, model, 1)
        model, opt, sched = acc.prepare(model, opt, sched)
        grpo_update(model, opt, sched, acc, warm, cfg, tok.pad_token_id)  # momentum to carry
        seen.clear()
        out = grpo_update(model, opt, sched, acc, trajs, cfg, tok.pad_token_id)
        return out, [p.detach().clone() for p in model.parameters()], seen

    out, weights, seen = update()
    monkeypatch.setattr(grpo, "rows_in_update", lambda adv, *_: list(range(len(adv))))
    every, every_weights, every_seen = update()
    assert len(seen) == out["rows_run"] == runs and len(every_seen) == every["rows_run"] == 6
    assert out["loss"] == pytest.approx(every["loss"], abs=1e-7)
    assert out["policy_tokens"] == every["policy_tokens"]
    for a, b in zip(weights, every_weights, strict=True):
        assert torch.allclose(a, b, atol=1e-7)


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
    asked = []

    def sampler(model, ids, k, seed, temperature):  # each question's rewards from the table
        asked.append((list(ids), k, temperature))
        return [
            make_traj(tok, q, "x", reward=r, seed=i)
            for q in ids
            for i, r in enumerate(rewards[q][:k])
        ]

    start = probe_start(
        sampler, None, list(rewards), questions=0, samples=3, seed=0, temperature=0.7
    )
    assert start.rates == {
        "never": 0.0,
        "half": pytest.approx(2 / 3),
        "always": 1.0,
    }  # F1 0.5 is no solve
    assert start.in_band == ["half"] and start.prior == start.rates
    assert start.summary()["in_band"] == 1 and start.summary()["never_solved"] == 1
    assert sorted(asked[0][0]) == sorted(rewards) and asked[0][1:] == (3, 0.7)
    # the pool starts on the in-band question, ahead of unprobed ones, and skips the others
    ids = ["fresh1", "fresh2", *rewards]
    cur = Curriculum(ids, CurriculumConfig(pool_size=1), prior=start.prior)
    assert cur.pool == ["half"] and sorted(cur.skipped) == ["always", "never"]
    # a seeded draw of 2 of the 3 questions
    part = probe_start(
        sampler, None, list(rewards), questions=2, samples=2, seed=1, temperature=1.0
    )
    assert len(part.rates) == 2 and set(part.rates) <= set(rewards)
    # none in the band: no prior, the curriculum starts unprobed
    rewards["half"] = [1.0, 1.0, 1.0]
    none = probe_start(
        sampler, None, ["never", "half"], questions=0, samples=3, seed=0, temperature=1.0
    )
    assert none.in_band == [] and none.prior is None


def test_a_deadline_ends_grpo_after_a_whole_step_and_saves_it(tmp_path):
    late = grpo_worker.run(tmp_path / "late", steps=3, deadline=time.perf_counter())
    assert late.steps == 1 and len(late.history) == 1
    assert Path(late.final_dir, "config.json").is_file()
    assert (tmp_path / "late" / "checkpoints" / "step-1").is_dir()  # resumable from there
    ample = grpo_worker.run(tmp_path / "ample", steps=2, deadline=time.perf_counter() + 3600)
    assert ample.steps == 2 and [r["loss"] for r in ample.history][:1] == [late.history[0]["loss"]]


def test_the_collapse_guard_stops_grpo_at_the_weights_of_its_last_passed_check(tmp_path):
    from transformers import Qwen2ForCausalLM

    from agent.rollout.model_server import weights_sha256
    from agent.train.loop import read_metrics

    guard = {"health_questions": 4, "health_every": 2}
    # greedy checks before step 1 and after steps 2 and 4; from the third on nothing is answered
    res = grpo_worker.run(tmp_path / "g", steps=6, collapse_at=2, **guard)
    assert res.steps == 4 and res.kept_step == 2
    calls = [json.loads(x) for x in (tmp_path / "g" / "rank-0.jsonl").read_text().splitlines()]
    checked = [c["weights"] for c in calls if c["temperature"] == 0]
    assert len(checked) == 3 and len(set(checked)) == 3
    assert all(len(c["questions"]) == 4 for c in calls if c["temperature"] == 0)
    final = Qwen2ForCausalLM.from_pretrained(res.final_dir)
    assert weights_sha256(final) == checked[1]  # step 2's weights, not step 4's
    logged = read_metrics(tmp_path / "g" / "metrics.jsonl")
    assert [r.get("health_unanswered") for r in logged] == [None, 0.0, None, 1.0]
    assert logged[-1]["health_kept_step"] == 2 and logged[-1]["health_base"] == 0.0
    kept = sorted((tmp_path / "g" / "health").iterdir())  # each check's episodes, to read
    assert [f.name for f in kept] == [f"step-0000{i}.rank0.jsonl" for i in (0, 2, 4)]
    assert [t.answer is None for t in read_trajectories(kept[2])] == [True] * 4
    # resumed with the same config, a stopped run stays stopped at the same weights
    again = grpo_worker.run(tmp_path / "g", steps=6, collapse_at=2, **guard)
    assert again.steps == 4 and again.kept_step == 2 and again.history == []
    assert weights_sha256(Qwen2ForCausalLM.from_pretrained(again.final_dir)) == checked[1]
    # a policy that keeps answering runs every step, the checks logged beside them
    healthy = grpo_worker.run(tmp_path / "h", steps=3, **guard)
    assert healthy.steps == healthy.kept_step == 3
    assert [r.get("health_unanswered") for r in healthy.history] == [None, 0.0, 0.0]


def test_with_retries_the_collapse_guard_goes_on_from_its_last_passed_check(tmp_path):
    from transformers import Qwen2ForCausalLM

    from agent.rollout.model_server import weights_sha256
    from agent.train.loop import read_metrics

    guard = {"health_questions": 4, "health_every": 2, "health_retries": 1}
    # checks before step 1 and after steps 2, 4 and 6; only the one after step 4 fails
    res = grpo_worker.run(tmp_path / "r", steps=6, collapse_at=2, recover_at=3, **guard)
    assert res.steps == res.kept_step == 6
    calls = [json.loads(x) for x in (tmp_path / "r" / "rank-0.jsonl").read_text().splitlines()]
    checked = [c["weights"] for c in calls if c["temperature"] == 0]
    after = [c["weights"] for c in calls if c["temperature"] > 0]  # steps 1-6's rollouts
    assert len(checked) == 4 and len(after) == 6
    assert after[4] == checked[1]  # step 5 sampled from step 2's weights, not step 4's
    assert after[4] != checked[2]
    logged = read_metrics(tmp_path / "r" / "metrics.jsonl")
    assert logged[3]["health_rolled_back"] == 1.0 and logged[3]["health_kept_step"] == 2
    assert [r.get("health_unanswered") for r in logged] == [None, 0.0, None, 1.0, None, 0.0]
    final = Qwen2ForCausalLM.from_pretrained(res.final_dir)
    assert weights_sha256(final) == checked[3]  # step 6's weights, which passed
    # retries spent, the next failure stops it at the last weights that passed
    stop = grpo_worker.run(tmp_path / "s", steps=6, collapse_at=2, **guard)
    assert stop.steps == 6 and stop.kept_step == 2
    assert "health_rolled_back" not in stop.history[-1] and stop.history[3]["health_rolled_back"]
    # a failure at the last step stops it there, a retry left or not
    late = grpo_worker.run(tmp_path / "l", steps=4, collapse_at=2, **guard)
    assert late.steps == 4 and late.kept_step == 2
    with pytest.raises(ConfigError, match="health_retries"):
        GRPOConfig(health_questions=4, health_retries=-1)


def test_the_collapse_guard_stops_grpo_when_the_policy_stops_searching(tmp_path):
    """Answering every question from memory is a collapse too: session 50's seed 1 answered all
    16 checks' questions at step 28, 3 of them after a search (SFT: 15)."""
    from agent.train import health
    from agent.train.loop import read_metrics

    guard = {"health_questions": 4, "health_every": 2}
    # checks before step 1 and after steps 2 and 4: the third writes no search call, all answered
    res = grpo_worker.run(tmp_path / "q", steps=6, quiet_at=2, **guard)
    assert res.steps == 4 and res.kept_step == 2
    logged = read_metrics(tmp_path / "q" / "metrics.jsonl")
    assert [r.get("health_unanswered") for r in logged] == [None, 0.0, None, 0.0]
    assert [r.get("health_unsearched") for r in logged] == [None, 0.0, None, 1.0]
    assert logged[-1]["health_base_unsearched"] == 0.0 and logged[-1]["health_kept_step"] == 2
    # a checkpoint written before the guard watched searching resumes watching answers alone
    old = {"base": 0.1, "kept_step": 4, "stopped_at": None}
    model = torch.nn.Linear(2, 2)
    cfg = GRPOConfig(health_questions=4)
    resumed = health.start(cfg, None, model, ["q0"], None, 4, old)  # type: ignore[arg-type]
    assert resumed.base_unsearched is None and resumed.rolled_back == []
    assert resumed.state_dict()["base_unsearched"] is None


def test_the_collapse_guard_checks_the_weights_a_deadline_ends_on(tmp_path):
    guard = {"health_questions": 4, "health_every": 4}
    # the deadline ends the run after step 1, between two scheduled checks: its check fails
    res = grpo_worker.run(
        tmp_path / "d", steps=6, deadline=time.perf_counter(), collapse_at=1, **guard
    )
    assert res.steps == 1 and res.kept_step == 0
    assert res.history[-1]["health_unanswered"] == 1.0
    healthy = grpo_worker.run(tmp_path / "h", steps=6, deadline=time.perf_counter(), **guard)
    assert healthy.steps == healthy.kept_step == 1
    assert healthy.history[-1]["health_unanswered"] == 0.0


def test_the_collapse_guard_checks_its_settings():
    with pytest.raises(ConfigError, match="health_margin"):
        GRPOConfig(health_questions=4, health_margin=1.0)
    with pytest.raises(ConfigError, match="health_every"):
        GRPOConfig(health_questions=4, health_every=0)


def test_dynamic_rounds_top_a_step_up_with_groups_that_both_solved_and_failed(tmp_path):
    """A step short of groups with both a solve and a failure plays more rounds of other
    questions and trains on their mixed groups, its own groups all kept; every rollout played is
    written and counted, and the rounds stop at the budget or once the step has its share."""
    from agent.train.grpo import mixed_groups
    from agent.train.loop import read_metrics

    res = grpo_worker.run(tmp_path / "d", steps=3, dynamic_rounds=2)
    logged = read_metrics(tmp_path / "d" / "metrics.jsonl")
    calls = [json.loads(x) for x in (tmp_path / "d" / "rank-0.jsonl").read_text().splitlines()]
    sampled = [c for c in calls if c["temperature"] > 0]
    g, per_step = 4, 4
    assert sum(r["dynamic_rounds"] for r in logged) > 0  # this seed's draws need some
    for step, rec in enumerate(logged, start=1):
        own, *extra = sampled[: 1 + int(rec["dynamic_rounds"])]
        sampled = sampled[1 + len(extra) :]
        assert all(not set(own["questions"]) & set(e["questions"]) for e in extra)
        played = list(
            read_trajectories(tmp_path / "d" / "rollouts" / f"step-{step:05d}.rank0.jsonl")
        )
        assert len(played) == g * per_step * (1 + len(extra))
        groups = [played[i : i + g] for i in range(0, len(played), g)]
        mixed_own = mixed_groups(played[: g * per_step], g)
        added = [x for x in groups[per_step:] if mixed_groups(x, g)][: per_step - mixed_own]
        assert rec["groups_trained"] == per_step + len(added)
        assert rec["mixed_groups"] == mixed_own + len(added)
        # more rounds only while the step is short, and never past the budget
        assert len(extra) <= 2 and (not extra or mixed_own < per_step)
        if len(extra) < 2 and extra:
            assert rec["mixed_groups"] == per_step
    assert res.steps == 3
    with pytest.raises(ConfigError, match="dynamic_rounds"):
        GRPOConfig(dynamic_rounds=-1)
    # off, a step samples once and logs no rounds
    grpo_worker.run(tmp_path / "off", steps=1)
    assert "dynamic_rounds" not in read_metrics(tmp_path / "off" / "metrics.jsonl")[0]
