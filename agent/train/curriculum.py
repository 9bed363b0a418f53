"""The data-policy loop (WebSailor-V2): keep training on questions the policy sometimes solves.

A question always solved or never solved gives GRPO no signal (every leave-one-out
advantage of its group is 0), so after `retire_after` rollouts it is retired and the pool
is topped up with fresh questions, skipping those whose prior pass rate (when one is
known, e.g. from a probe of the starting weights) lies outside the useful band; questions
with a prior come first, so the pool starts on those inside the band. With `max_rollouts`
a question also leaves once it has had that many rollouts, whatever its pass rate: a pool
of the few in-band questions, sampled step after step, teaches their answers rather than
how to find answers. Spent questions come back, in the order they left, only when no fresh
one is left (a second pass), and only those whose own pass rate so far is inside the band.
The pool's composition by each task's tags (uncertainty type, structure) is logged over time.
Deterministic: the order of fresh questions comes from the seed, picks from visit counts.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wikisim.errors import ConfigError


@dataclass(frozen=True)
class CurriculumConfig:
    """Attributes:
    pool_size: active questions sampled from.
    retire_after: rollouts a question must have had before it can be retired.
    band_low, band_high: a question stays while band_low < pass rate < band_high.
    max_rollouts: a question leaves after this many rollouts in one pass (0: it stays while in band).
    """

    pool_size: int = 32
    retire_after: int = 16
    band_low: float = 0.0
    band_high: float = 1.0
    max_rollouts: int = 0

    def __post_init__(self) -> None:
        if self.pool_size < 1 or self.retire_after < 1:
            raise ConfigError(
                f"pool_size={self.pool_size} and retire_after={self.retire_after} must be >= 1"
            )
        if self.max_rollouts < 0:
            raise ConfigError(f"max_rollouts={self.max_rollouts} must be >= 0 (0: no limit)")
        if not 0.0 <= self.band_low < self.band_high <= 1.0:
            raise ConfigError(
                f"need 0 <= band_low < band_high <= 1, got {self.band_low}, {self.band_high}"
            )


class Curriculum:
    """Pass-rate tracking, retirement and top-up over a fixed universe of task ids."""

    def __init__(
        self,
        task_ids: Sequence[str],
        cfg: CurriculumConfig,
        *,
        seed: int = 0,
        tags: Mapping[str, Mapping[str, str]] | None = None,
        prior: Mapping[str, float] | None = None,
    ) -> None:
        if len(set(task_ids)) != len(task_ids) or not task_ids:
            raise ConfigError(
                f"curriculum needs a non-empty list of distinct task ids, got {len(task_ids)} ids"
            )
        self.cfg = cfg
        self.tags = {k: dict(v) for k, v in (tags or {}).items()}
        self.prior = dict(prior or {})
        order = list(task_ids)
        random.Random(seed).shuffle(order)
        order.sort(key=lambda t: t not in self.prior)  # probed first: start on those in the band
        self.fresh: list[str] = order
        self.pool: list[str] = []
        self.seen: dict[str, int] = {}
        self.solved: dict[str, int] = {}
        self.retired: dict[str, str] = {}  # id -> "solved" | "unsolved" | "spent"
        self.skipped: list[str] = []  # outside the band by prior (or, returning, by own rate)
        self.entered: dict[str, int] = {}  # id -> its rollouts when it last entered the pool
        self._top_up()

    def rate(self, task_id: str) -> float:
        return self.solved.get(task_id, 0) / max(1, self.seen.get(task_id, 0))

    def _in_band(self, task_id: str) -> bool:
        """By its own pass rate once it has rollouts (a spent one, returning), else by its prior."""
        p = self.rate(task_id) if task_id in self.seen else self.prior.get(task_id)
        return p is None or self.cfg.band_low < p < self.cfg.band_high

    def _top_up(self) -> None:
        while len(self.pool) < self.cfg.pool_size:
            if not self.fresh:  # a new pass over the spent questions, in the order they left
                self.fresh = [t for t, why in self.retired.items() if why == "spent"]
                if not self.fresh:
                    return
                for tid in self.fresh:
                    del self.retired[tid]
            tid = self.fresh.pop(0)
            if self._in_band(tid):
                self.pool.append(tid)
                self.entered[tid] = self.seen.get(tid, 0)
            else:
                self.skipped.append(tid)

    def next_questions(self, n: int) -> list[str]:
        """The n least-visited active questions (ties: pool order); repeats only if the pool is smaller."""
        if not self.pool:
            raise ConfigError(
                "the curriculum pool is empty: every question was retired; add questions or widen the band"
            )
        ranked = sorted(range(len(self.pool)), key=lambda i: (self.seen.get(self.pool[i], 0), i))
        return [self.pool[ranked[j % len(ranked)]] for j in range(n)]

    def update(self, results: Sequence[tuple[str, bool]]) -> list[tuple[str, str]]:
        """Record (task_id, solved) rollouts; retire settled questions; top up. Returns the retirements."""
        for tid, ok in results:
            self.seen[tid] = self.seen.get(tid, 0) + 1
            self.solved[tid] = self.solved.get(tid, 0) + int(ok)
        retired = []
        for tid in list(self.pool):
            r, seen = self.rate(tid), self.seen.get(tid, 0)
            if seen >= self.cfg.retire_after and not self.cfg.band_low < r < self.cfg.band_high:
                reason = "solved" if r >= self.cfg.band_high else "unsolved"
            elif self.cfg.max_rollouts and seen - self.entered.get(tid, 0) >= self.cfg.max_rollouts:
                reason = "spent"
            else:
                continue
            self.pool.remove(tid)
            self.retired[tid] = reason
            retired.append((tid, reason))
        self._top_up()
        return retired

    def composition(self) -> dict[str, Any]:
        """Counts of the active pool by each tag, plus retirement and supply counts (for the log)."""
        out: dict[str, Any] = {
            "pool": len(self.pool),
            "fresh_left": len(self.fresh),
            "retired_solved": sum(1 for r in self.retired.values() if r == "solved"),
            "retired_unsolved": sum(1 for r in self.retired.values() if r == "unsolved"),
            "retired_spent": sum(1 for r in self.retired.values() if r == "spent"),
            "skipped_by_prior": len(self.skipped),
        }
        keys = sorted({k for tid in self.pool for k in self.tags.get(tid, {})})
        for key in keys:
            counts = Counter(self.tags.get(tid, {}).get(key, "?") for tid in self.pool)
            out[f"by_{key}"] = dict(sorted(counts.items()))
        rates = [self.rate(t) for t in self.pool if self.seen.get(t)]
        out["pool_mean_pass_rate"] = sum(rates) / len(rates) if rates else None
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "fresh": list(self.fresh),
            "pool": list(self.pool),
            "seen": dict(self.seen),
            "solved": dict(self.solved),
            "retired": dict(self.retired),
            "skipped": list(self.skipped),
            "entered": dict(self.entered),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.fresh, self.pool = list(state["fresh"]), list(state["pool"])
        self.seen, self.solved = dict(state["seen"]), dict(state["solved"])
        self.retired, self.skipped = dict(state["retired"]), list(state["skipped"])
        self.entered = dict(state.get("entered", {}))  # absent from runs saved before it existed
