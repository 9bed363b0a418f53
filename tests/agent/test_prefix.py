"""A group's shared prefix run once: the same logits, loss, gradients and update as every row run whole."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_sft import make_traj

from agent.rollout.models import tiny_model
from agent.train.config import GRPOConfig
from agent.train.grpo import grpo_update
from agent.train.loop import Batch, collate, make_accelerator, make_optimizer, micro_batches
from agent.train.losses import kept_positions
from agent.train.prefix import MIN_PREFIX, PrefixPass, shared_prefix, worth_sharing

QUESTION = "the river that flows through the capital of the country where the author was born"


@pytest.fixture(scope="module")
def tok():
    return tiny_model(0)[0]


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float rounding, relative to the tensor's largest entry (the rows' sums run in
    another order when they share a prefix)."""
    return float((a - b).abs().max()) <= 1e-4 * float(b.abs().max()) + 1e-7


SYSTEM = (
    "You research questions with the search and visit tools, read the pages they return, and "
    "answer with a short span copied from what you read. " * 3
)


def group(tok, answers: list[str], rewards: list[float], qid: str = QUESTION, system: str = SYSTEM):
    """A question's rollouts behind a system turn (in GRPO groups the shared prompt and teacher
    turns are most of a row; `worth_sharing` leaves a short prefix to the rows)."""
    head = tuple(
        tok(f"<|im_start|>system\n{system}<|im_end|>\n", add_special_tokens=False)["input_ids"]
    )
    return [
        dataclasses.replace(t, prompt_ids=head + t.prompt_ids)
        for t in (
            make_traj(tok, qid, a, reward=r, seed=i)
            for i, (a, r) in enumerate(zip(answers, rewards, strict=True))
        )
    ]


def test_the_shared_prefix_stops_at_the_first_difference_the_first_scored_position_or_a_row_end():
    ids = torch.tensor([[5, 6, 7, 8, 9, 0], [5, 6, 7, 3, 9, 9], [5, 6, 7, 8, 9, 9]])
    att = (torch.arange(6) < torch.tensor([[5], [6], [6]])).long()
    none = torch.zeros(3, 5)
    batch = Batch(ids, att, none, none)
    assert shared_prefix(batch, kept_positions(none)) == 3  # row 1 differs at column 3
    late = none.clone()
    late[:, 3] = 1  # position 3 scores token 4
    assert shared_prefix(batch, kept_positions(late)) == 3
    early = none.clone()
    early[1, 1] = 1  # row 1 scores token 2: its logits at position 1 are needed
    assert shared_prefix(batch, kept_positions(early)) == 1
    same = Batch(ids[[0, 0]], att[[0, 0]], none[:2], none[:2])
    assert shared_prefix(same, kept_positions(none[:2])) == 4  # a suffix of 1 token is left
    assert shared_prefix(Batch(ids[:1], att[:1], none[:1], none[:1]), kept_positions(none[:1])) == 0


def test_micro_batches_never_span_two_groups():
    assert micro_batches(5, 2) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    groups = ["a", "a", "a", "b", "c", "c"]
    assert micro_batches(6, 2, groups) == [
        slice(0, 2),
        slice(2, 3),
        slice(3, 4),
        slice(4, 6),
    ]
    assert micro_batches(6, 8, groups) == [slice(0, 3), slice(3, 4), slice(4, 6)]


@pytest.mark.parametrize("lora", [False, True])
def test_rows_run_one_at_a_time_past_a_shared_prefix_give_the_whole_rows_logits_and_gradients(
    tok, lora
):
    trajs = group(tok, ["Thames", "the Seine", "Danube river"], [1.0, 0.0, 0.5])
    batch = collate(trajs, tok.pad_token_id)
    keep = kept_positions(batch.loss_mask)
    prefix = shared_prefix(batch, keep)
    assert prefix >= 16 and prefix == len(trajs[0].prompt_ids) - 1  # up to the first policy token
    _, model = tiny_model(0)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
        for name, p in model.named_parameters():  # B starts at 0: give the adapter an effect
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.1)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    weights = torch.linspace(-1, 1, int(keep.sum()))

    def run(p: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Kept logits and gradients, rows whole (p = 0) or one at a time past a p-token prefix."""
        model.zero_grad()
        if not p:
            logits = model(
                input_ids=batch.input_ids, attention_mask=batch.attention_mask, logits_to_keep=keep
            ).logits
            (torch.log_softmax(logits, -1)[:, 7] * weights).sum().backward()
            return logits.detach(), [q.grad.clone() for q in params]
        pre, parts, done = PrefixPass(model, batch.input_ids, p, grad=True), [], 0
        for i in range(len(trajs)):
            row = batch.rows([i])
            logits = pre.logits(model, row, keep[i : i + 1, : row.input_ids.shape[1]])
            n = logits.shape[0]
            (torch.log_softmax(logits, -1)[:, 7] * weights[done : done + n]).sum().backward()
            parts.append(logits.detach())
            done += n
        pre.backward()
        return torch.cat(parts), [q.grad.clone() for q in params]

    whole, whole_grads = run(0)
    shared, shared_grads = run(prefix)
    assert shared.shape == whole.shape == (int(keep.sum()), len(tok))
    assert torch.allclose(shared, whole, atol=1e-5)
    assert all(close(a, b) for a, b in zip(shared_grads, whole_grads, strict=True))
    assert any(float(g.abs().sum()) > 0 for g in shared_grads)


@pytest.mark.parametrize(("kl_coef", "micro"), [(0.0, 8), (0.1, 8), (0.0, 1)])
def test_an_update_over_shared_prefixes_is_the_update_of_whole_rows(tok, tmp_path, kl_coef, micro):
    """Two questions of 3 rows: with sharing each question's prefix runs once at batch 1 and its
    rows' suffixes after it (all 3 together, or one at a time), and the loss, gradient norm and
    new weights are the whole rows'."""
    trajs = group(tok, ["Thames", "the Seine", "Danube"], [1.0, 0.0, 0.25]) + group(
        tok, ["Nile", "Congo", "Niger"], [0.0, 1.0, 0.0], qid=QUESTION.replace("author", "poet")
    )

    def update(shared: bool) -> tuple[dict, list[torch.Tensor], list[tuple[int, int]]]:
        cfg = GRPOConfig(
            output_dir=str(tmp_path),
            group_size=3,
            micro_batch_size=micro,
            shared_prefix=shared,
            kl_coef=kl_coef,
            cpu=True,
            lr=1e-2,
        )
        acc = make_accelerator(cfg)
        _, model = tiny_model(0)
        shapes: list[tuple[int, int]] = []
        model.register_forward_pre_hook(
            lambda _, args, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
        )
        opt, sched = make_optimizer(cfg, model, 1)
        model, opt, sched = acc.prepare(model, opt, sched)
        ref_model = tiny_model(1)[1].requires_grad_(False) if kl_coef else None
        out = grpo_update(model, opt, sched, acc, trajs, cfg, tok.pad_token_id, ref_model)
        return out, [p.detach().clone() for p in model.parameters()], shapes

    whole, whole_w, whole_shapes = update(False)
    shared, shared_w, shared_shapes = update(True)
    prefixes = [len(trajs[i].prompt_ids) - 1 for i in (0, 3)]
    assert [n for n, _ in whole_shapes] == ([6] if micro == 8 else [1] * 6)
    # each question: its prefix, then its rows' suffixes
    suffixes = [3] if micro == 8 else [1, 1, 1]
    assert [n for n, _ in shared_shapes] == ([1, *suffixes] * 2)
    second = 1 + len(suffixes)
    assert [shared_shapes[0][1], shared_shapes[second][1]] == prefixes
    assert shared["shared_prefix"] == 1.0 and whole["shared_prefix"] == 0.0
    assert shared["loss"] == pytest.approx(whole["loss"], abs=1e-6)
    assert shared["kl"] == pytest.approx(whole["kl"], abs=1e-6)
    assert shared["grad_norm"] == pytest.approx(whole["grad_norm"], rel=1e-4)
    # the new weights: AdamW's first step moves each weight by ~lr * sign(gradient), so a gradient
    # entry near 0 may flip with rounding; most weights move the same
    same = sum(int((a - b).abs().le(1e-6).sum()) for a, b in zip(shared_w, whole_w, strict=True))
    assert same / sum(a.numel() for a in whole_w) > 0.99


def test_a_prefix_runs_once_only_where_it_is_most_of_the_group(tok):
    """A scratch group's prompt is a fifth of its tokens and its pass would not pay; a started
    group's prompt and teacher turns are most of them."""
    for system, worth in (("Be brief.", False), (SYSTEM, True)):
        batch = collate(group(tok, ["Thames", "Seine"], [1.0, 0.0], system=system), 0)
        length = shared_prefix(batch, kept_positions(batch.loss_mask))
        assert length >= MIN_PREFIX and worth_sharing(batch, length) is worth
