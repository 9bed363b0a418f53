"""GRPO as WebSailor-V2 specifies: strictly on-policy, leave-one-out advantages, token-level loss.

Every step samples G rollouts per question with the current weights, turns their rewards
into advantages, and makes exactly one optimizer update from them; nothing is reused, and
no group is resampled unless `GRPOConfig.dynamic_rounds` asks for dynamic sampling (more
questions for a step short of groups that both solved and failed). The loss pieces live in `agent.train.losses`;
sampling is any `Sampler` (the in-process model, or a generation server, through
`agent.rollout.episodes`: see `agent.train.episodes`). With `cfg.generation_server` set, the weights are
pushed to that server before the first batch and after every update (`agent.train.weight_sync`).
"""

from __future__ import annotations

import copy
import dataclasses
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from agent.eval.metrics import pass_at_k
from agent.rollout.trajectory import Trajectory, read_trajectories, write_trajectories
from agent.train import health
from agent.train.config import GRPOConfig
from agent.train.curriculum import Curriculum, CurriculumConfig
from agent.train.episodes import Sampler, drawn
from agent.train.health import Health
from agent.train.loop import (
    Batch,
    RunDir,
    accumulate,
    collate,
    global_sum,
    load_model,
    make_accelerator,
    make_optimizer,
    micro_batches,
    plot_curves,
)
from agent.train.losses import (
    apply_format_penalty,
    conservative_include,
    kept_logprobs_entropy,
    kept_positions,
    leave_one_out_advantages,
    policy_gradient_loss,
    std_normalized_advantages,
)
from agent.train.prefix import PrefixPass, shared_prefix, worth_sharing
from agent.train.sft import answer_observed
from agent.train.starts import OWN_EPISODES, Starts, own_starts, pick_starts, read_starts
from wikisim.errors import ConfigError
from wikisim.tools.protocol import STOP_STRINGS

CURVES = (
    "reward",
    "solve_rate",
    "dev_pass@1",
    "dev_pass@k",
    "health_unanswered",
    "health_unsearched",
    "entropy",
    "response_tokens",
    "turns",
    "tool_calls",
    "truncated_share",
    "grounded_share",
    "retrieved_share",
    "echo_share",
    "malformed_share",
    "unsearched_share",
    "adv_std",
    "grad_norm",
    "loss",
)


def solved(t: Trajectory) -> bool:
    """Success for pass rates: a full reward (exact match, or F1 of 1)."""
    return t.reward >= 1.0


def well_formed(t: Trajectory) -> bool:
    return t.terminated and t.answer is not None


def searched_out(t: Trajectory) -> bool:
    """Ran out of turns, every one of them a well-formed tool call: the policy chose to search
    or visit again rather than answer, where a limit cutting a turn short (a "?" call, or none)
    did not stop it (`GRPOConfig.unanswered_negative`)."""
    return (
        t.truncated
        and t.answer is None
        and all(u.tool_calls and "?" not in u.tool_calls for u in t.turns)
    )


def closed_out(t: Trajectory) -> bool:
    """Ran out of turns, every one of them ended by the policy at a stop string (a call, run or
    refused, or a forged `<tool_response>`), none cut by the token limit: as with `searched_out`,
    the policy chose not to answer (`GRPOConfig.refused_negative`)."""
    return (
        t.truncated
        and t.answer is None
        and all(u.text.rstrip().endswith(STOP_STRINGS) for u in t.turns)
    )


def rollout_stats(trajs: Sequence[Trajectory]) -> dict[str, float]:
    """Sums over this process's rollouts (means are taken after summing over processes); tokens,
    turns and tool calls count the policy's own turns, not a teacher's replayed start."""
    own = [[u for u in t.turns if not u.forced] for t in trajs]
    return {
        "n": float(len(trajs)),
        "reward": sum(t.reward for t in trajs),
        "solve_rate": float(sum(solved(t) for t in trajs)),
        "started_share": float(sum(map(started, trajs))),
        "response_tokens": float(sum(len(u.ids) for o in own for u in o)),
        "turns": float(sum(map(len, own))),
        "tool_calls": float(sum(len(u.tool_calls) for o in own for u in o)),
        "truncated_share": float(sum(t.truncated for t in trajs)),
        "answered_share": float(sum(t.answer is not None for t in trajs)),
        "grounded_share": float(sum(map(answer_observed, trajs))),
        "retrieved_share": sum(t.metrics.get("retrieved", 0.0) for t in trajs),
        "echo_share": float(sum(echoed(t) for t in trajs if "echo" in t.metrics)),
        "malformed_share": float(sum(malformed(t) for t in trajs if "malformed" in t.metrics)),
        "unsearched_share": float(sum(map(unsearched, trajs))),
    }


def started(t: Trajectory) -> bool:
    """Started from replayed turns (`agent.train.starts`), not played from the question."""
    return any(u.forced for u in t.turns)


def _marked(t: Trajectory, key: str, option: str) -> float:
    """`metrics[key]` as the sampler set it (`EnvRunner.annotate`), which `option` reads."""
    if key not in t.metrics:
        raise ConfigError(
            f"{option} needs the sampler to set metrics[{key!r}] (EnvRunner's does); "
            f"the rollout of {t.task_id!r} has only {sorted(t.metrics)}"
        )
    return t.metrics[key]


def _retrieval_paid(t: Trajectory) -> float:
    """`GRPOConfig.retrieval_bonus`'s share: searching that found the answer, paid only where the
    rollout went on to answer. A started rollout (a teacher's or its own turns replayed up to the
    answer) has it on screen already, and paid for finding it again it learned to visit until its
    turns ran out (session 35); paid without an answer, a group whose searches all found it
    ranked searching on past the find above answering, and seed 2 collapsed into a loop of
    visits without a URL (session 38)."""
    if started(t):
        return 0.0
    found = _marked(t, "retrieved", "retrieval_bonus")
    return found if t.answer is not None else 0.0


def echoed(t: Trajectory) -> bool:
    """A wrong answer that is words of the question: `GRPOConfig.echo_penalty` charges it and
    `rollout_stats` counts it."""
    return bool(_marked(t, "echo", "echo_penalty")) and not solved(t)


def malformed(t: Trajectory) -> bool:
    """Made a call the env could not run as written: `GRPOConfig.malformed_penalty` charges it
    and `rollout_stats` counts it."""
    return bool(_marked(t, "malformed", "malformed_penalty"))


def unsearched(t: Trajectory) -> bool:
    """Played from the question and answered without writing a search call (run or refused):
    `GRPOConfig.unsearched_penalty` charges it and `rollout_stats` counts it. A started rollout's
    replayed turns did its searching."""
    return not started(t) and t.answer is not None and not t.called("search")


def advantages_for(
    trajs: Sequence[Trajectory], cfg: GRPOConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, include) of contiguous groups of `cfg.group_size` rollouts."""
    rewards = torch.tensor([t.reward for t in trajs], dtype=torch.float32)
    if cfg.grounded_only:
        rewards = rewards * torch.tensor([answer_observed(t) for t in trajs], dtype=torch.float32)
    for coef, marked in (  # a bonus paid, or a penalty charged, by what the rollout did
        (cfg.retrieval_bonus, _retrieval_paid),
        (-cfg.echo_penalty, echoed),
        (-cfg.malformed_penalty, malformed),
        (-cfg.unsearched_penalty, unsearched),
    ):
        if coef:
            rewards = rewards + coef * torch.tensor(
                [float(marked(t)) for t in trajs], dtype=torch.float32
            )
    if cfg.format_penalty:
        rewards = apply_format_penalty(
            rewards, torch.tensor([well_formed(t) for t in trajs]), cfg.format_penalty
        )
    if cfg.advantage == "leave_one_out":
        adv = leave_one_out_advantages(rewards, cfg.group_size)
    else:
        adv = std_normalized_advantages(rewards, cfg.group_size)
    if cfg.exclude_truncated:
        cut = [
            t.truncated
            and not (cfg.unanswered_negative and searched_out(t))
            and not (cfg.refused_negative and closed_out(t))
            for t in trajs
        ]
        include = conservative_include(
            torch.tensor(cut), torch.tensor([t.answer is not None for t in trajs])
        )
    else:
        include = torch.ones(len(trajs), dtype=torch.bool)
    return adv, include


def grpo_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    accelerator: Any,
    trajs: Sequence[Trajectory],
    cfg: GRPOConfig,
    pad_id: int,
    ref_model: torch.nn.Module | None = None,
) -> dict[str, float]:
    """One optimizer update from freshly sampled rollouts; returns global (all-process) metrics.

    The normalizers count every included token; the forward and backward passes run only over
    `rows_in_update`, so the entropy and clip fraction logged are those rows'.
    """
    adv, include = advantages_for(trajs, cfg)
    every = collate(trajs, pad_id)
    kept = every.loss_mask * include.float().unsqueeze(1)
    n_tok = global_sum(accelerator, kept.sum().item())
    n_seq = global_sum(accelerator, float(((kept.sum(1)) > 0).sum().item()))
    rows = rows_in_update(adv, include, cfg, accelerator.num_processes)
    # under DDP a backward must follow exactly one forward of the wrapped model: rows run whole there
    share = cfg.shared_prefix and accelerator.num_processes == 1
    groups = [trajs[i].task_id for i in rows] if share else []
    t_fb = time.perf_counter()
    model.train()
    sums: dict[str, float] = {}
    micro_batch = cfg.micro_batch_size
    if rows:
        batch: Batch = every.rows(rows).to(accelerator.device)
        radv, rinc = adv[rows].to(accelerator.device), include[rows].to(accelerator.device)
        kept_mask = kept[rows, : batch.loss_mask.shape[1]].to(accelerator.device)

        passes = _GroupPrefixes(model, ref_model, batch, groups)

        def backward(mb: slice) -> dict[str, float]:
            prefix, ref_prefix = passes.enter(mb)
            terms = _micro_batch_loss(
                model,
                ref_model,
                batch,
                mb,
                radv,
                rinc,
                kept_mask,
                cfg,
                n_tok,
                n_seq,
                prefix,
                ref_prefix,
            )
            # DDP averages gradients over processes; the normalizers are global: scale back to a sum
            accelerator.backward(terms["loss"] * accelerator.num_processes)
            passes.leave(mb)
            return {k: float(v.detach()) for k, v in terms.items()}

        sums, micro_batch = accumulate(
            accelerator, optimizer, len(rows), micro_batch, backward, groups
        )
    else:  # the zero gradient every row gives (the optimizer still steps: decay, momentum)
        for p in model.parameters():
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
    norm = accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    t_fb = time.perf_counter() - t_fb
    g = {k: global_sum(accelerator, v) for k, v in sums.items()}
    a = {
        "adv_sum": float(adv.sum()),
        "adv_sq": float((adv**2).sum()),
        "n": float(len(adv)),
        "excluded": float((~include).sum()),
        "adv_nonzero": float((adv != 0).sum()),
    }
    a = {k: global_sum(accelerator, v) for k, v in a.items()}
    adv_mean = a["adv_sum"] / a["n"]
    return {
        "loss": g.get("loss", 0.0),
        "pg_loss": g.get("pg_loss", 0.0),
        "kl": g.get("kl", 0.0),
        "clip_fraction": g.get("clip_fraction", 0.0),
        "entropy": g.get("entropy", 0.0) / max(g.get("entropy_tokens", 0.0), 1.0),
        "policy_tokens": n_tok,
        "rows_run": global_sum(accelerator, float(len(rows))),
        "excluded_truncated": a["excluded"],
        "adv_mean": adv_mean,
        "adv_std": max(a["adv_sq"] / a["n"] - adv_mean**2, 0.0) ** 0.5,
        "adv_nonzero_share": a["adv_nonzero"] / a["n"],
        "grad_norm": float(norm),
        "micro_batch": micro_batch,
        "shared_prefix": float(share),
        "lr": scheduler.get_last_lr()[0],
        "time_train": t_fb,
    }


def rows_in_update(
    adv: torch.Tensor, include: torch.Tensor, cfg: GRPOConfig, processes: int
) -> list[int]:
    """The rows whose forward and backward passes the update runs.

    Without a KL or entropy term, a row outside the loss or with a zero advantage (every row
    of a group whose rewards are equal) adds exactly nothing to the loss or its gradient, so
    one process leaves it out: the same update for less work. Under DDP every rank must run
    the same micro-batches (each backward is a collective), so there every row runs.
    """
    if processes > 1 or cfg.kl_coef or cfg.entropy_coef:
        return list(range(len(adv)))
    return [i for i in range(len(adv)) if include[i] and adv[i] != 0]


def _micro_batch_loss(
    model: torch.nn.Module,
    ref_model: torch.nn.Module | None,
    batch: Batch,
    mb: slice,
    adv: torch.Tensor,
    include: torch.Tensor,
    kept_mask: torch.Tensor,
    cfg: GRPOConfig,
    n_tok: float,
    n_seq: float,
    prefix: PrefixPass | None = None,
    ref_prefix: PrefixPass | None = None,
) -> dict[str, torch.Tensor]:
    """The loss of one micro-batch (its terms kept for the log): policy gradient, KL, entropy.

    The lm_head runs only at the positions the loss mask keeps (`kept_positions`), not over
    every position: the terms equal the full-logits computation's (tested). With `prefix` (and
    `ref_prefix` for the reference model) the rows run only past their group's shared prefix.
    """
    rows = batch.rows(mb)  # cut to its longest row
    ids, keep = rows.input_ids, kept_positions(rows.loss_mask)
    logits = _kept_logits(model, rows, keep, prefix)
    logp, ent = kept_logprobs_entropy(logits, ids, keep, entropy_grad=bool(cfg.entropy_coef))
    del logits
    ref = None
    if ref_model is not None:  # made when kl_coef > 0
        with torch.no_grad():
            ref_logits = _kept_logits(ref_model, rows, keep, ref_prefix)
            ref = kept_logprobs_entropy(ref_logits, ids, keep)[0]
    terms = policy_gradient_loss(
        logp,
        adv[mb],
        rows.loss_mask,
        include[mb],
        aggregation=cfg.aggregation,
        old_logprobs=rows.old_logprobs if cfg.clip_eps else None,
        clip_eps=cfg.clip_eps or None,
        ref_logprobs=ref,
        kl_coef=cfg.kl_coef,
        token_normalizer=n_tok,
        sequence_normalizer=n_seq,
    )
    loss = terms.loss
    m = rows.loss_mask.float()
    ent_sum, ent_n = (ent.detach() * m).sum(), m.sum()
    if cfg.entropy_coef:
        kept = kept_mask[mb, : m.shape[1]]
        loss = loss - cfg.entropy_coef * (ent * kept).sum() / max(n_tok, 1.0)
    return {
        "loss": loss,
        "pg_loss": terms.pg_loss,
        "kl": terms.kl,
        "clip_fraction": terms.clip_fraction,
        "entropy": torch.as_tensor(float(ent_sum)),
        "entropy_tokens": torch.as_tensor(float(ent_n)),
    }


def _kept_logits(
    model: Any, rows: Batch, keep: torch.Tensor, prefix: PrefixPass | None
) -> torch.Tensor:
    """The logits at the kept positions of `rows`, run whole or past their group's prefix."""
    if prefix is not None:
        return prefix.logits(model, rows, keep)
    return model(
        input_ids=rows.input_ids,
        attention_mask=rows.attention_mask,
        logits_to_keep=keep,
        use_cache=False,
    ).logits


class _GroupPrefixes:
    """The prefix passes of the group whose micro-batches run now (`agent.train.prefix`): made
    at its first micro-batch, sent back after its last; none without `groups` or where the rows
    share too little for it to pay (`worth_sharing`)."""

    def __init__(
        self, model: Any, ref_model: torch.nn.Module | None, batch: Batch, groups: Sequence[object]
    ) -> None:
        self.model, self.ref_model, self.batch = model, ref_model, batch
        whole = micro_batches(len(groups), max(len(groups), 1), groups)  # one slice per group
        self.spans = {s.start: s for s in whole}  # first row -> the group's rows
        self.end = 0
        self.now: tuple[PrefixPass | None, PrefixPass | None] = (None, None)

    def enter(self, mb: slice) -> tuple[PrefixPass | None, PrefixPass | None]:
        span = self.spans.get(mb.start)
        if span is not None:  # a group's first micro-batch (again, after an out-of-memory retry)
            rows = self.batch.rows(span)
            length = shared_prefix(rows, kept_positions(rows.loss_mask))
            self.end = span.stop
            self.now = (None, None)
            if worth_sharing(rows, length):
                ref = self.ref_model
                self.now = (
                    PrefixPass(self.model, rows.input_ids, length, grad=True),
                    None if ref is None else PrefixPass(ref, rows.input_ids, length, grad=False),
                )
        return self.now

    def leave(self, mb: slice) -> None:
        if mb.stop == self.end and self.now[0] is not None:
            self.now[0].backward()
            self.now = (None, None)


def sample_pass_rates(trajs: Sequence[Trajectory], k: int) -> tuple[float, float, int]:
    """(pass@1, pass@k, questions) from k contiguous samples per question (the unbiased estimator at n=k)."""
    n_q = len(trajs) // k
    hits = [sum(solved(t) for t in trajs[i * k : (i + 1) * k]) for i in range(n_q)]
    return (
        sum(pass_at_k(k, h, 1) for h in hits) / max(n_q, 1),
        sum(pass_at_k(k, h, k) for h in hits) / max(n_q, 1),
        n_q,
    )


def question_pass_rates(trajs: Sequence[Trajectory], k: int) -> dict[str, float]:
    """Each question's share of solved rollouts, from k contiguous samples per question."""
    return {
        trajs[i].task_id: sum(solved(t) for t in trajs[i : i + k]) / k
        for i in range(0, len(trajs) - k + 1, k)
    }


def probe_pass_rates(
    sampler: Sampler,
    model: torch.nn.Module,
    task_ids: Sequence[str],
    k: int,
    seed: int,
    temperature: float,
) -> dict[str, float]:
    """Pass rates of the starting weights at the training temperature: the curriculum's prior.

    A question the policy never (or always) solves gives every rollout of its group a zero
    advantage, so GRPO from a weak SFT policy learns nothing on it; with this prior the
    curriculum starts on the questions inside its band and skips the rest.
    """
    if k < 2:
        raise ConfigError(f"probing pass rates needs k >= 2 samples per question, got {k}")
    return question_pass_rates(sampler(model, list(task_ids), k, seed, temperature), k)


@dataclass(frozen=True)
class ProbeStart:
    """Where GRPO starts: the probed pass rates, and the curriculum's prior (None: start unprobed)."""

    rates: dict[str, float]  # probed question -> share of its rollouts solved
    band: tuple[float, float]

    @property
    def in_band(self) -> list[str]:
        return [t for t, r in self.rates.items() if self.band[0] < r < self.band[1]]

    @property
    def prior(self) -> dict[str, float] | None:
        """The rates when some question is in the band, else None (start unprobed)."""
        return self.rates if self.in_band else None

    def summary(self) -> dict[str, float]:
        rates = list(self.rates.values())
        return {
            "questions": float(len(rates)),
            "mean_pass_rate": sum(rates) / max(len(rates), 1),
            "never_solved": float(sum(r == 0 for r in rates)),
            "always_solved": float(sum(r == 1 for r in rates)),
            "in_band": float(len(self.in_band)),
        }


def probe_start(
    sampler: Sampler,
    model: torch.nn.Module,
    task_ids: Sequence[str],
    *,
    questions: int,
    samples: int,
    seed: int,
    temperature: float,
    band: tuple[float, float] = (0.0, 1.0),
) -> ProbeStart:
    """Probe `questions` of `task_ids` (a seeded draw; 0: all) and decide where GRPO starts.

    With some probed question inside the band its pass rates become the curriculum's prior:
    the pool starts on the in-band questions, skips the probed ones outside the band and
    tops up with unprobed ones. With none in the band the prior would only skip questions,
    so there is none: the curriculum starts unprobed.
    """
    probed = list(task_ids)
    random.Random(seed).shuffle(probed)
    probed = probed[:questions] if questions else probed
    rates = probe_pass_rates(sampler, model, probed, samples, seed * 7 + 3, temperature)
    return ProbeStart(rates, band)


def dev_pass_rates(
    sampler: Sampler,
    model: torch.nn.Module,
    task_ids: Sequence[str],
    k: int,
    seed: int,
    temperature: float,
    accelerator: Any | None = None,
) -> dict[str, float]:
    """pass@1 and pass@k on fixed questions; under several processes each samples a shard."""
    rank, world = (accelerator.process_index, accelerator.num_processes) if accelerator else (0, 1)
    mine = list(task_ids)[rank::world]
    trajs = sampler(model, mine, k, seed + rank, temperature) if mine else []
    p1, pk, n = sample_pass_rates(trajs, k)
    if world > 1:
        p1s, pks, ns = (global_sum(accelerator, x) for x in (p1 * n, pk * n, float(n)))
        p1, pk, n = p1s / ns, pks / ns, int(ns)
    return {"pass@1": p1, "pass@k": pk, "questions": float(n)}


def _step_questions(
    cfg: GRPOConfig, task_ids: Sequence[str], step: int, cur: Curriculum | None
) -> list[str]:
    if cur is not None:
        return cur.next_questions(cfg.questions_per_step)
    per_epoch = len(task_ids)
    out = []
    for j in range(step * cfg.questions_per_step, (step + 1) * cfg.questions_per_step):
        epoch, i = divmod(j, per_epoch)
        perm = torch.randperm(
            per_epoch, generator=torch.Generator().manual_seed(cfg.seed * 100_003 + epoch)
        ).tolist()
        out.append(task_ids[perm[i]])
    return out


@dataclass(frozen=True)
class GRPOResult:
    final_dir: str
    history: list[dict[str, Any]]  # the metrics of each step run in this call
    steps: int
    weight_syncs: list[dict[str, Any]]  # one per push to the generation server (empty in-process)
    # the step whose weights final_dir holds: steps, or the collapse guard's last check passed
    kept_step: int


@dataclass
class _Run:
    """What a GRPO run holds between steps: the prepared model and optimizer, the run folder, the
    curriculum and the generation server's weight sync."""

    cfg: GRPOConfig
    accelerator: Any
    tokenizer: Any
    model: Any
    ref_model: torch.nn.Module | None
    optimizer: Any
    scheduler: Any
    run: RunDir
    curriculum: Curriculum | None
    sync: Any
    start: int
    pad: int
    starts: Starts  # task id -> the turns its groups start from; empty when not starting from any
    questions: list[str]  # the training questions (under cfg.own_starts, those with a start)
    health: Health | None  # the collapse guard (cfg.health_questions)

    @property
    def stopped(self) -> bool:
        """The collapse guard stopped the run (in this call, or before it was resumed)."""
        return self.health is not None and self.health.stopped_at is not None


def _prepare(
    cfg: GRPOConfig,
    task_ids: Sequence[str],
    sampler: Sampler,
    tags: dict[str, dict[str, str]] | None,
    prior: dict[str, float] | None,
    sources: Mapping[str, str] | None,
) -> _Run:
    """Model, reference model, optimizer, run folder, starts, curriculum and weight sync, resumed
    where the run stopped."""
    accelerator = make_accelerator(cfg)
    if cfg.questions_per_step % accelerator.num_processes:
        raise ConfigError(
            f"questions_per_step={cfg.questions_per_step} must divide by the "
            f"{accelerator.num_processes} processes"
        )
    if cfg.dynamic_rounds and accelerator.num_processes > 1:
        raise ConfigError(
            f"dynamic_rounds={cfg.dynamic_rounds} runs in one process: each process would train on "
            "as many groups as its own rounds found, and under DDP every process must run as many rows"
        )
    tokenizer, model = load_model(cfg, cfg.init_checkpoint)
    ref_model = None
    if cfg.kl_coef:
        ref_model = copy.deepcopy(model).eval().requires_grad_(False).to(accelerator.device)
    optimizer, scheduler = make_optimizer(cfg, model, cfg.steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    run = RunDir(cfg, accelerator)
    starts: Starts = read_starts(cfg.teacher_data) if cfg.teacher_starts else {}
    asked = list(task_ids)  # the health checks draw from all of them
    if cfg.own_starts:
        starts = _own_starts(cfg, accelerator, model, run.root, sampler, task_ids, sources)
        task_ids = [t for t in task_ids if t in starts]
    cur = None
    if cfg.curriculum:
        ccfg = CurriculumConfig(
            cfg.pool_size, cfg.retire_after, cfg.band_low, cfg.band_high, cfg.question_rollouts
        )
        cur = Curriculum(list(task_ids), ccfg, seed=cfg.seed, tags=tags, prior=prior)
    start, state = run.resume() if cfg.resume else (0, {})
    if cur is not None and state.get("curriculum"):
        cur.load_state_dict(state["curriculum"])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    sync = None
    if cfg.generation_server:
        from agent.train.weight_sync import WeightSync

        sync = WeightSync(
            cfg.generation_server,
            cfg.sync_dir or run.root / "sync",
            tokenizer,
            accelerator,
            cfg.sync_protocol,
        )
        sync.push(model, start)
    guard = None
    if cfg.health_questions:  # after the push: a generation server samples the checks
        unwrapped = accelerator.unwrap_model(model)
        guard = health.start(cfg, sampler, unwrapped, asked, run, start, state.get("health"))
    return _Run(
        cfg,
        accelerator,
        tokenizer,
        model,
        ref_model,
        optimizer,
        scheduler,
        run,
        cur,
        sync,
        start,
        pad,
        starts,
        list(task_ids),
        guard,
    )


def _own_starts(
    cfg: GRPOConfig,
    accelerator: Any,
    model: Any,
    root: Path,
    sampler: Sampler,
    task_ids: Sequence[str],
    sources: Mapping[str, str] | None,
) -> Starts:
    """`cfg.own_starts`: the starting weights play one episode of each of that many questions,
    drawn by the seed (`agent.train.episodes.drawn`; evenly from each of `sources` under
    `cfg.even_sources`), at the training temperature (each process
    a shard); `OWN_EPISODES` in the run folder keeps them all, and a resumed run reads them
    back instead of playing again."""
    path = root / OWN_EPISODES
    if not path.is_file():
        rank, world = accelerator.process_index, accelerator.num_processes
        even = sources if cfg.even_sources else None
        mine = drawn(task_ids, cfg.own_starts, cfg.seed * 31 + 7, even)[rank::world]
        seed = cfg.seed * 31 + 5 + rank
        played = sampler(accelerator.unwrap_model(model), mine, 1, seed, cfg.temperature)
        if world > 1:
            from accelerate.utils import gather_object

            played = gather_object(played)
        if accelerator.is_main_process:
            write_trajectories(path, played)
        accelerator.wait_for_everyone()
    starts = own_starts(read_trajectories(path))
    if not starts:
        raise ConfigError(
            f"own_starts={cfg.own_starts}: no episode in {path} was answered after a gold answer "
            "was on screen, so no group can start from one; play more questions or train SFT longer"
        )
    return starts


def mixed_groups(trajs: Sequence[Trajectory], group_size: int) -> int:
    """Groups (contiguous blocks of `group_size`) that both solved and failed: those whose
    answers, not only their penalties, have something to teach."""
    groups = [trajs[i : i + group_size] for i in range(0, len(trajs), group_size)]
    return sum(any(map(solved, g)) and not all(map(solved, g)) for g in groups)


def _dynamic_rounds(
    r: _Run,
    sampler: Sampler,
    model: Any,
    trajs: list[Trajectory],
    mine: list[str],
    seed: int,
) -> tuple[list[Trajectory], list[Trajectory], int]:
    """`GRPOConfig.dynamic_rounds`: more rounds of this process's share of questions until its
    groups that both solved and failed number its share. Returns the groups to train on (the
    step's own, then the extra rounds' mixed ones), every rollout played, and the rounds played.
    A round's questions are drawn by the seed from the active ones (the curriculum's pool, else
    the run's questions) other than the step's own; under starts every extra group starts."""
    cfg, g = r.cfg, r.cfg.group_size
    need = len(mine) - mixed_groups(trajs, g)
    active = r.curriculum.pool if r.curriculum is not None else r.questions
    own = set(mine)
    others = [q for q in active if q not in own]
    kept, played, rounds = list(trajs), list(trajs), 0
    while need > 0 and others and rounds < cfg.dynamic_rounds:
        rounds += 1
        round_seed = seed + rounds * 10**12
        extra = random.Random(round_seed).sample(others, min(len(mine), len(others)))
        starts = {q: r.starts[q] for q in extra if q in r.starts}
        got = sampler(model, extra, g, round_seed, cfg.temperature, starts)
        played += got
        for i in range(0, len(got), g):
            if need > 0 and mixed_groups(got[i : i + g], g):
                kept += got[i : i + g]
                need -= 1
    return kept, played, rounds


def _train_step(r: _Run, sampler: Sampler, step: int) -> dict[str, Any]:
    """Sample this process's share of the step's questions, update, sync the server; the step's record."""
    cfg, accelerator = r.cfg, r.accelerator
    per_proc = cfg.questions_per_step // accelerator.num_processes
    questions = _step_questions(cfg, r.questions, step, r.curriculum)
    mine = questions[
        accelerator.process_index * per_proc : (accelerator.process_index + 1) * per_proc
    ]
    seed = (cfg.seed * 100_003 + step) * 1_000 + accelerator.process_index
    share = cfg.own_share if cfg.own_starts else cfg.teacher_starts
    starts = pick_starts(mine, r.starts, share, seed) if r.starts else {}
    t_gen = time.perf_counter()
    model = accelerator.unwrap_model(r.model)
    trajs = sampler(model, mine, cfg.group_size, seed, cfg.temperature, starts)
    if len(trajs) != len(mine) * cfg.group_size:
        raise ConfigError(
            f"sampler returned {len(trajs)} trajectories for {len(mine)} questions x G={cfg.group_size}"
        )
    played, rounds = trajs, 0
    if cfg.dynamic_rounds:
        trajs, played, rounds = _dynamic_rounds(r, sampler, model, trajs, mine, seed)
    t_gen = time.perf_counter() - t_gen
    r.run.rollouts(step + 1, played)
    metrics = grpo_update(
        r.model, r.optimizer, r.scheduler, accelerator, trajs, cfg, r.pad, r.ref_model
    )
    if metrics["micro_batch"] < cfg.micro_batch_size:  # it ran out of memory: keep the size
        r.cfg = dataclasses.replace(cfg, micro_batch_size=int(metrics["micro_batch"]))
    if r.sync is not None:
        t_sync = time.perf_counter()
        r.sync.push(r.model, step + 1)
        metrics["time_weight_sync"] = time.perf_counter() - t_sync
    stats = {k: global_sum(accelerator, v) for k, v in rollout_stats(trajs).items()}
    n = stats.pop("n")
    record: dict[str, Any] = {
        "step": step + 1,
        **{k: v / n for k, v in stats.items()},
        **metrics,
        "time_generate": t_gen,
    }
    if cfg.dynamic_rounds:
        record["dynamic_rounds"] = global_sum(accelerator, float(rounds))
        record["groups_trained"] = global_sum(accelerator, len(trajs) / cfg.group_size)
        record["mixed_groups"] = global_sum(accelerator, float(mixed_groups(trajs, cfg.group_size)))
    if r.curriculum is not None:
        from accelerate.utils import gather_object

        results = [(t.task_id, solved(t)) for t in played]
        retired = r.curriculum.update(
            gather_object(results) if accelerator.num_processes > 1 else results
        )
        record["retired"] = len(retired)
        record["pool"] = r.curriculum.composition()
    return record


def train_grpo(
    cfg: GRPOConfig,
    task_ids: Sequence[str],
    sampler: Sampler,
    *,
    dev_ids: Sequence[str] = (),
    tags: dict[str, dict[str, str]] | None = None,
    prior: dict[str, float] | None = None,
    deadline: float | None = None,
    sources: Mapping[str, str] | None = None,
) -> GRPOResult:
    """Run `cfg.steps` on-policy updates (resuming from `cfg.output_dir`); see the module docstring.

    `deadline` (a `time.perf_counter()` value) ends the run after the step past which one more,
    at this call's mean pace with its dev evals, would end later; at least one step runs. The
    pace is measured as the run goes, because a step's cost varies several-fold with its
    groups (a teacher's start shares most of its tokens, a scratch group few).

    With `cfg.health_questions` the collapse guard (`agent.train.health`) may end the run early,
    its weights back at the last check passed (`GRPOResult.kept_step`); a resumed run that had
    stopped so runs no more steps. The weights a run ends with are checked whatever ends it (the
    last step or the deadline), so none leaves unchecked.
    """
    if not task_ids:
        raise ConfigError("GRPO needs training questions; the task set is empty")
    if cfg.even_sources and not sources:
        raise ConfigError(
            "even_sources: give train_grpo the source of each task id (sources=; "
            "wikisim.env.tasks.task_sources reads them from a task spec)"
        )
    r = _prepare(cfg, task_ids, sampler, tags, prior, sources)
    history: list[dict[str, Any]] = []
    began = time.perf_counter()
    for step in range(r.start, r.start if r.stopped else cfg.steps):
        t0 = time.perf_counter()
        record = _train_step(r, sampler, step)
        done = step + 1
        t_dev = time.perf_counter()
        if dev_ids and cfg.dev_every and (done % cfg.dev_every == 0 or done == cfg.steps):
            ev = dev_pass_rates(
                sampler,
                r.accelerator.unwrap_model(r.model),
                dev_ids,
                cfg.dev_k,
                cfg.seed * 7 + 1,
                cfg.temperature,
                r.accelerator,
            )
            record.update({"dev_pass@1": ev["pass@1"], "dev_pass@k": ev["pass@k"]})
        record["time_dev_eval"] = time.perf_counter() - t_dev
        out_of_time = deadline is not None and _past(
            r.accelerator, deadline, (time.perf_counter() - began) / (len(history) + 1)
        )
        last = done == cfg.steps or out_of_time
        # the guard checks every health_every steps and the weights the run ends with
        if r.health is not None and (done % cfg.health_every == 0 or last):
            t_health = time.perf_counter()
            unwrapped = r.accelerator.unwrap_model(r.model)
            figures = health.after_step(r.health, cfg, sampler, unwrapped, r.run, done, last)
            record.update(figures)
            went_on = "health_rolled_back" in figures  # from the kept weights
            if went_on:
                r.optimizer.optimizer.state.clear()  # not the drift's momentum
            if (r.stopped or went_on) and r.sync is not None:
                r.sync.push(r.model, done)  # the server samples the weights restored
            record["time_health"] = time.perf_counter() - t_health
        record["time_step"] = (
            time.perf_counter() - t0 - record["time_dev_eval"] - record.get("time_health", 0.0)
        )  # the training step alone
        record["time_other"] = (
            record["time_step"]
            - record["time_generate"]
            - record["time_train"]
            - record.get("time_weight_sync", 0.0)
        )
        r.run.log(record)
        history.append(record)
        last = last or r.stopped
        if (cfg.save_every and done % cfg.save_every == 0) or last:
            r.run.save(
                done,
                {
                    "curriculum": r.curriculum.state_dict() if r.curriculum else None,
                    "health": r.health.state_dict() if r.health else None,
                },
            )
        if last:
            break
    final = r.run.save_final(r.model, r.tokenizer)
    if r.accelerator.is_main_process:
        plot_curves(r.run.metrics_path, r.run.root / "curves.png", CURVES)
    return GRPOResult(
        final_dir=str(final),
        history=history,
        steps=r.start + len(history),
        weight_syncs=r.sync.history if r.sync else [],
        kept_step=r.health.kept_step if r.health and r.stopped else r.start + len(history),
    )


def _past(accelerator: Any, deadline: float, pace: float) -> bool:
    """Whether one more step at `pace` seconds would end after `deadline`, as the main process
    sees it (every process must stop at the same step)."""
    verdict = [time.perf_counter() + pace > deadline]
    if accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        broadcast_object_list(verdict)
    return bool(verdict[0])
