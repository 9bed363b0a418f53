"""Advantages and losses as pure functions over explicit tensors and masks.

Nothing here knows about models, trajectories or Accelerate: the trainer gathers
tensors, these functions turn them into numbers, and each one is unit-tested against
hand-computed values (tests/agent/test_losses.py).

Shapes: B sequences, T target positions (already shifted: position t scores token t+1).
`mask` is 1 on the policy's own tokens and 0 on prompt, observation and padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from wikisim.errors import ConfigError


def leave_one_out_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each rollout's reward minus the mean reward of the other G-1 rollouts of its group.

    Why leave-one-out: the baseline is then independent of the rollout it scores, so the
    estimate stays unbiased without a value model (WebSailor-V2, RLOO).

    Args:
        rewards: (N*G,) rewards, the G rollouts of one question contiguous.
        group_size: G, at least 2 (one rollout has no "others").
    """
    groups = _grouped(rewards, group_size, "leave_one_out_advantages")
    if group_size < 2:
        raise ConfigError(
            f"leave-one-out needs group_size >= 2, got {group_size}; sample more rollouts per question"
        )
    others_mean = (groups.sum(dim=1, keepdim=True) - groups) / (group_size - 1)
    return (groups - others_mean).reshape(-1)


def std_normalized_advantages(
    rewards: torch.Tensor, group_size: int, eps: float = 1e-4
) -> torch.Tensor:
    """Standard GRPO (DeepSeekMath): (reward - group mean) / (group std + eps), std unbiased as in TRL."""
    groups = _grouped(rewards, group_size, "std_normalized_advantages")
    std = (
        groups.std(dim=1, keepdim=True, unbiased=True)
        if group_size > 1
        else torch.zeros_like(groups[:, :1])
    )
    return ((groups - groups.mean(dim=1, keepdim=True)) / (std + eps)).reshape(-1)


def _grouped(rewards: torch.Tensor, group_size: int, where: str) -> torch.Tensor:
    if rewards.dim() != 1 or group_size < 1 or rewards.numel() % group_size:
        raise ConfigError(
            f"{where}: {tuple(rewards.shape)} rewards do not split into groups of {group_size}; "
            "pass a flat tensor with the G rollouts of each question contiguous"
        )
    return rewards.float().reshape(-1, group_size)


def conservative_include(truncated: torch.Tensor, answered: torch.Tensor) -> torch.Tensor:
    """Which sequences enter the loss: all but those cut by a limit without a final answer.

    Why: a rollout stopped by the turn or context budget was not shown to be wrong, so
    pushing its tokens down would punish long but possibly correct reasoning. Other
    negatives (a wrong answer, a malformed ending) stay. They still count in the group
    baseline, since their reward is a real sample of the policy's return.
    """
    return ~(truncated.bool() & ~answered.bool())


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """(B, L, V) logits and (B, L) ids -> (B, L-1) log-probability of each next token."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def kept_positions(mask: torch.Tensor) -> torch.Tensor:
    """(B, L) bool: the input positions whose next token the loss scores, from the (B, L-1) mask.

    Position t's logits score token t+1, so the last position scores nothing. Passed to the
    model as `logits_to_keep`, the lm_head runs only there: the policy's own tokens are a
    few hundred of a ~2k-token episode, and a 49k-token vocabulary made the full logits
    (and their log-softmax) the bulk of a training step's memory.
    """
    return torch.nn.functional.pad(mask > 0, (0, 1))


def _kept_log_softmax(
    logits: torch.Tensor, input_ids: torch.Tensor, keep: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, V) logits at the N kept positions -> their (N, V) log-softmax and (N,) target log-probs."""
    targets = input_ids[:, 1:][keep[:, :-1]]
    lp = torch.log_softmax(logits.float(), dim=-1)
    return lp, lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def kept_logprobs(
    logits: torch.Tensor, input_ids: torch.Tensor, keep: torch.Tensor
) -> torch.Tensor:
    """(N, V) logits at the N kept positions -> (B, L-1) next-token log-probs, zero off them
    (what `token_logprobs` gives under the same mask); SFT needs no entropy."""
    shape = (input_ids.shape[0], input_ids.shape[1] - 1)
    return _scatter(_kept_log_softmax(logits, input_ids, keep)[1], keep[:, :-1], shape)


def kept_logprobs_entropy(
    logits: torch.Tensor, input_ids: torch.Tensor, keep: torch.Tensor, entropy_grad: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, V) logits at the N kept positions -> (B, L-1) next-token log-probs and entropies.

    Both are zero off the kept positions, exactly what `token_logprobs` and the entropy of
    the full logits give under the same mask. The entropy carries a gradient only with
    `entropy_grad` (an entropy bonus); otherwise it is for the log.
    """
    lp, logp = _kept_log_softmax(logits, input_ids, keep)
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        ent = -(lp.exp() * lp).sum(-1)
    shape = (input_ids.shape[0], input_ids.shape[1] - 1)
    return _scatter(logp, keep[:, :-1], shape), _scatter(ent, keep[:, :-1], shape)


def _scatter(values: torch.Tensor, where: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    return values.new_zeros(shape).masked_scatter(where, values)


Aggregation = Literal["token", "sequence"]


@dataclass(frozen=True)
class PolicyLossTerms:
    """The loss to backpropagate and its parts (detached) for logging."""

    loss: torch.Tensor
    pg_loss: torch.Tensor
    kl: torch.Tensor
    clip_fraction: torch.Tensor


def policy_gradient_loss(
    logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    include: torch.Tensor,
    *,
    aggregation: Aggregation = "token",
    old_logprobs: torch.Tensor | None = None,
    clip_eps: float | None = None,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    token_normalizer: float | None = None,
    sequence_normalizer: float | None = None,
) -> PolicyLossTerms:
    """The GRPO surrogate loss over one (micro-)batch.

    token aggregation (the paper's): sum over every policy token of every included
    sequence, divided by the number of such tokens in the whole batch, so long
    trajectories weigh by their length instead of being averaged per sequence first.
    sequence aggregation (standard GRPO): mean over each sequence's tokens, then mean
    over included sequences.

    Without `clip_eps` the ratio is exp(logp - logp.detach()): value 1, gradient
    A * grad(logp), the exact on-policy gradient. With `clip_eps` the ratio is taken
    against `old_logprobs` (the sampler's) and clipped PPO-style.

    Args:
        logprobs: (B, T) log-probs of the targets under the current weights (with grad).
        advantages: (B,) one advantage per sequence.
        mask: (B, T) 1 on policy tokens.
        include: (B,) bool, sequences that enter the loss (see `conservative_include`).
        token_normalizer: total included policy tokens of the whole batch across
            micro-batches and processes (defaults to this micro-batch's count).
        sequence_normalizer: total included sequences likewise, for sequence aggregation.
        ref_logprobs: (B, T) log-probs under the reference model, for the KL term (k3).
    """
    if aggregation not in ("token", "sequence"):
        raise ConfigError(f"aggregation={aggregation!r} is not one of 'token', 'sequence'")
    if clip_eps is not None and old_logprobs is None:
        raise ConfigError(
            "clip_eps needs old_logprobs (the sampler's log-probs); pass them or set clip_eps=None"
        )
    if kl_coef and ref_logprobs is None:
        raise ConfigError(f"kl_coef={kl_coef} needs ref_logprobs; pass them or set kl_coef=0")
    m = mask.float() * include.float().unsqueeze(1)
    adv = advantages.float().unsqueeze(1)
    if clip_eps is None:
        ratio = torch.exp(logprobs - logprobs.detach())
        per_token = -adv * ratio
        clipped = torch.zeros_like(per_token)
    else:
        if old_logprobs is None:
            raise ConfigError(
                f"clip_eps={clip_eps} compares with the sampler's log-probs: pass old_logprobs"
            )
        ratio = torch.exp(logprobs - old_logprobs)
        unclipped = -adv * ratio
        clipped_obj = -adv * torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
        per_token = torch.maximum(unclipped, clipped_obj)
        clipped = (clipped_obj > unclipped).float()
    if kl_coef:
        if ref_logprobs is None:
            raise ConfigError(
                f"kl_coef={kl_coef} needs the reference model's log-probs: pass ref_logprobs"
            )
        delta = ref_logprobs - logprobs
        kl_tok = torch.exp(delta) - delta - 1  # k3: unbiased, always >= 0
    else:
        kl_tok = torch.zeros_like(per_token)
    pg = _aggregate(per_token, m, aggregation, token_normalizer, sequence_normalizer)
    kl = _aggregate(kl_tok, m, aggregation, token_normalizer, sequence_normalizer)
    clip_frac = _aggregate(clipped, m, aggregation, token_normalizer, sequence_normalizer)
    return PolicyLossTerms(
        loss=pg + kl_coef * kl,
        pg_loss=pg.detach(),
        kl=kl.detach(),
        clip_fraction=clip_frac.detach(),
    )


def _aggregate(
    per_token: torch.Tensor,
    m: torch.Tensor,
    aggregation: Aggregation,
    token_normalizer: float | None,
    sequence_normalizer: float | None,
) -> torch.Tensor:
    if aggregation == "token":
        denom = token_normalizer if token_normalizer is not None else float(m.sum())
        return (per_token * m).sum() / max(denom, 1.0)
    lengths = m.sum(dim=1)
    seq_means = (per_token * m).sum(dim=1) / lengths.clamp(min=1.0)
    n_seq = sequence_normalizer if sequence_normalizer is not None else float((lengths > 0).sum())
    return seq_means.sum() / max(n_seq, 1.0)


def masked_nll(
    logprobs: torch.Tensor, mask: torch.Tensor, token_normalizer: float | None = None
) -> torch.Tensor:
    """SFT loss: negative log-likelihood of the policy tokens, averaged over all of them in the batch."""
    m = mask.float()
    denom = token_normalizer if token_normalizer is not None else float(m.sum())
    return -(logprobs * m).sum() / max(denom, 1.0)


def apply_format_penalty(
    rewards: torch.Tensor, well_formed: torch.Tensor, penalty: float
) -> torch.Tensor:
    """Subtract `penalty` from the reward of every rollout that did not end in a well-formed answer."""
    return rewards.float() - penalty * (~well_formed.bool()).float()
