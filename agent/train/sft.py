"""Rejection-sampled SFT cold start (WebSailor-V2): keep only what a teacher got right, then imitate it.

`rejection_sample` lets a teacher play every training question K times and keeps the
correct, well-formed, distinct trajectories; `train_sft` fits a model to them under
Accelerate with the loss on the policy's own tokens only (prompt and observations masked).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from agent.rollout.trajectory import Trajectory
from agent.train.config import SFTConfig
from agent.train.loop import (
    RunDir,
    accumulate,
    collate,
    global_sum,
    load_model,
    make_accelerator,
    make_optimizer,
    plot_curves,
)
from agent.train.losses import kept_logprobs, kept_positions, masked_nll
from agent.train.teachers import read_not_guessed
from wikisim.errors import ConfigError


def well_formed_correct(t: Trajectory, min_reward: float = 1.0) -> bool:
    """Ended by an answer (not cut by a budget), every turn parsed (a turn cut at the token
    budget or malformed names no tool: "?") but one whose fault was given, not learned (forced,
    or `forced_at` its tokens from the fault on: a broken call the teacher recovers from), and
    scored at least `min_reward`."""
    return (
        t.terminated
        and not t.truncated
        and t.answer is not None
        and t.reward >= min_reward
        and not any("?" in u.tool_calls for u in t.turns if not (u.forced or u.forced_at))
    )


def answer_observed(t: Trajectory) -> bool:
    """The answer was written in an observation before the answer turn, and before the policy's own
    turns named it (read, not guessed or known; see `agent.train.teachers.read_not_guessed`)."""
    return t.answer is not None and read_not_guessed(
        t.answer, [(u.text, u.observation) for u in t.turns[:-1]]
    )


def gold_retrieved(t: Trajectory, golds: Sequence[str]) -> bool:
    """A gold answer reached an observation of one of the policy's own tool calls (a teacher's
    replayed turns do not count) before its own turns named it: what its searching found."""
    own = [(u.text, u.observation) for u in t.turns if not u.forced]
    return any(read_not_guessed(g, own) for g in golds)


@dataclass(frozen=True)
class RejectionReport:
    """Per question: trajectories tried and kept (after dedup)."""

    tried: dict[str, int]
    kept: dict[str, int]

    @property
    def kept_total(self) -> int:
        return sum(self.kept.values())

    @property
    def tried_total(self) -> int:
        return sum(self.tried.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "kept": self.kept_total,
            "tried": self.tried_total,
            "questions_with_any": sum(1 for v in self.kept.values() if v),
            "per_question": {q: [self.kept[q], self.tried[q]] for q in self.tried},
        }


def rejection_sample(
    play: Callable[[Sequence[str], int], list[Trajectory]],
    task_ids: Sequence[str],
    k: int,
    min_reward: float = 1.0,
    *,
    grounded: bool = True,
) -> tuple[list[Trajectory], RejectionReport]:
    """Let a teacher play each question `k` times and keep the distinct correct, well-formed episodes.

    With `grounded` (the default) an episode is kept only if its answer appeared in an
    observation before the answer turn, so the student learns to read answers, not to recall them.

    Args:
        play: `play(task_ids, attempt)` runs one episode per task id with the episode seed
            derived from `attempt` and returns the trajectories in the same order.
        task_ids: the training questions.
        k: attempts per question.
    """
    if k < 1:
        raise ConfigError(f"samples_per_question={k} must be >= 1")
    kept: list[Trajectory] = []
    seen: set[tuple[int, ...]] = set()
    tried = dict.fromkeys(task_ids, 0)
    n_kept = dict.fromkeys(task_ids, 0)
    for attempt in range(k):
        for t in play(task_ids, attempt):
            tried[t.task_id] += 1
            key = tuple(t.token_ids())
            if (
                well_formed_correct(t, min_reward)
                and (not grounded or answer_observed(t))
                and key not in seen
            ):
                seen.add(key)
                kept.append(t)
                n_kept[t.task_id] += 1
    return kept, RejectionReport(tried=tried, kept=n_kept)


def cap_direct(kept: Sequence[Trajectory], share: float, seed: int) -> list[Trajectory]:
    """The kept episodes with at most `share` of them answering after a single tool call.

    Most teacher episodes find the answer in their first search's results (~80% with the
    research teacher), so a student learns to answer after one search whatever it read; capping
    them leaves the episodes that searched again or visited a larger part of the data. Which
    direct episodes stay is drawn with `seed`; the order of the rest is unchanged.
    """
    if not 0 < share <= 1:
        raise ConfigError(f"direct_share={share} must be in (0, 1]")
    direct = [i for i, t in enumerate(kept) if sum(len(u.tool_calls) for u in t.turns) <= 1]
    longer = len(kept) - len(direct)
    # d / (d + longer) <= share  <=>  d <= share * longer / (1 - share)
    room = len(direct) if share == 1 else int(share * longer / (1 - share))
    if room >= len(direct):
        return list(kept)
    drop = set(direct) - set(random.Random(seed).sample(direct, room))
    return [t for i, t in enumerate(kept) if i not in drop]


def _step_indices(cfg: SFTConfig, n: int, step: int, steps_per_epoch: int) -> list[int]:
    """The data order depends only on (seed, epoch): a resumed run sees the same batches."""
    epoch, i = divmod(step, steps_per_epoch)
    perm = torch.randperm(
        n, generator=torch.Generator().manual_seed(cfg.seed * 100_003 + epoch)
    ).tolist()
    return perm[i * cfg.batch_size : (i + 1) * cfg.batch_size]


def _shard(indices: list[int], rank: int, world: int) -> list[int]:
    """Equal-size shards (wrapping around) so every process runs the same number of backward passes."""
    per = math.ceil(len(indices) / world)
    padded = [indices[j % len(indices)] for j in range(per * world)]
    return padded[rank * per : (rank + 1) * per]


def _converged(cfg: SFTConfig, recent: list[float]) -> bool:
    return bool(cfg.stop_loss) and len(recent) == 5 and sum(recent) / 5 < cfg.stop_loss


@dataclass(frozen=True)
class SFTResult:
    final_dir: str
    losses: list[float]  # the loss of each optimizer step run in this call
    steps: int


def sft_loss(model: Any, batch: Any, mb: slice, n_tokens: float) -> torch.Tensor:
    """Negative log-likelihood of the policy's own tokens in micro-batch `mb`, summed over the
    global batch's `n_tokens`.

    The lm_head runs only at the positions the loss keeps (`kept_positions`), as in GRPO: a
    turn's own tokens are a few hundred of a ~1.5k-token episode, and the full (L, 49k)
    logits with their log-softmax were most of a step's memory. The loss equals the
    full-logits one (tested).
    """
    rows = batch.rows(mb)
    ids, keep = rows.input_ids, kept_positions(rows.loss_mask)
    logits = model(
        input_ids=ids, attention_mask=rows.attention_mask, logits_to_keep=keep, use_cache=False
    ).logits
    return masked_nll(kept_logprobs(logits, ids, keep), rows.loss_mask, n_tokens)


def _backward(
    model: Any, accelerator: Any, batch: Any, n_tokens: float, mb: slice
) -> dict[str, float]:
    loss = sft_loss(model, batch, mb, n_tokens)
    # DDP averages gradients over processes; scale back to a sum over the global batch
    accelerator.backward(loss * accelerator.num_processes)
    return {"loss": loss.item()}


def train_sft(
    cfg: SFTConfig, trajectories: Sequence[Trajectory], *, stop_after: int | None = None
) -> SFTResult:
    """Fit the model to `trajectories` (token ids as recorded), resuming from `cfg.output_dir`.

    `stop_after` ends the call after that many optimizer steps (a checkpoint is written),
    which is how tests interrupt and resume a run.
    """
    if not trajectories:
        raise ConfigError(
            "no trajectories to train on: rejection sampling kept none; raise samples_per_question or check the teacher"
        )
    accelerator = make_accelerator(cfg)
    tokenizer, model = load_model(cfg)
    model.train()
    steps_per_epoch = math.ceil(len(trajectories) / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    optimizer, scheduler = make_optimizer(cfg, model, total)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    run = RunDir(cfg, accelerator)
    start, state = run.resume() if cfg.resume else (0, {})
    recent: list[float] = list(state.get("recent_losses", []))
    if _converged(cfg, recent):  # a resumed run that had already stopped on stop_loss
        total = start
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    losses: list[float] = []
    micro_batch = cfg.micro_batch_size  # halved for good where a micro-batch runs out of memory
    for step in range(start, total):
        idx = _shard(
            _step_indices(cfg, len(trajectories), step, steps_per_epoch),
            accelerator.process_index,
            accelerator.num_processes,
        )
        batch = collate([trajectories[i] for i in idx], pad).to(accelerator.device)
        n_tokens = global_sum(accelerator, batch.loss_mask.sum().item())
        sums, micro_batch = accumulate(
            accelerator,
            optimizer,
            len(idx),
            micro_batch,
            functools.partial(_backward, model, accelerator, batch, n_tokens),
        )
        local_loss = sums["loss"]
        norm = accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step_loss = global_sum(accelerator, local_loss)
        losses.append(step_loss)
        recent = (recent + [step_loss])[-5:]
        run.log(
            {
                "step": step + 1,
                "epoch": step // steps_per_epoch,
                "loss": step_loss,
                "grad_norm": float(norm),
                "lr": scheduler.get_last_lr()[0],
                "tokens": n_tokens,
                "micro_batch": micro_batch,
            }
        )
        done = step + 1
        converged = _converged(cfg, recent)
        interrupted = bool(stop_after) and len(losses) >= (stop_after or 0)
        if (
            (cfg.save_every and done % cfg.save_every == 0)
            or done == total
            or interrupted
            or converged
        ):
            run.save(done, {"recent_losses": recent})
        if converged:
            break
        if interrupted:
            return SFTResult(final_dir="", losses=losses, steps=done)
    final = run.save_final(model, tokenizer)
    if accelerator.is_main_process:
        plot_curves(run.metrics_path, run.root / "curves.png", ["loss", "grad_norm", "lr"])
    return SFTResult(final_dir=str(final), losses=losses, steps=start + len(losses))
