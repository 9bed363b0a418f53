"""Statistics a benchmark needs to be trusted: intervals over tasks, paired tests, power.

Tasks, not episodes, are the unit of sampling: a benchmark is a sample of questions,
and several seeds of one question are not independent evidence. So every interval here
is a bootstrap over tasks (a cluster bootstrap when a task has several seeds), every
comparison pairs the two runs task by task, and power is planned in tasks.

Pure functions over numpy arrays; every random draw comes from
`numpy.random.default_rng(seed)`, so the same inputs and seed give the same numbers in
any process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from wikisim.errors import ConfigError

N_BOOT = 2000
N_PERM = 10000
EXACT_PERM_MAX = 16  # enumerate all 2^m sign flips up to this many non-zero differences


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile-bootstrap interval.

    Attributes:
        mean: the estimate on the full sample.
        low, high: the interval's ends.
        confidence: e.g. 0.95.
        n: the number of independent units (tasks) it rests on.
    """

    mean: float
    low: float
    high: float
    confidence: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def to_dict(self) -> dict[str, float | int]:
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n": self.n,
        }


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of run A against run B on the same tasks (difference is A - B).

    Attributes:
        diff: mean per-task difference and its bootstrap interval.
        p_value: two-sided p-value of the paired test.
        test: "mcnemar-exact" (0/1 scores) or "permutation" (sign flips of the differences).
        a_better, b_better: tasks where A scored higher, where B scored higher.
    """

    diff: Interval
    p_value: float
    test: str
    a_better: int
    b_better: int


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(
            f"confidence={confidence}: use a level strictly between 0 and 1, e.g. 0.95"
        )


def _as_1d(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ConfigError(f"{what}: need a non-empty 1-d array of scores, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{what}: scores must be finite (found NaN or inf)")
    return arr


def cluster_sums(
    values: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and counts, clusters in sorted order (one cluster per value when None)."""
    arr = _as_1d(values, "values")
    if clusters is None:
        return arr, np.ones_like(arr)
    keys = np.asarray(clusters)
    if keys.shape != arr.shape:
        raise ConfigError(
            f"clusters: {keys.shape[0] if keys.ndim else 0} labels for {arr.size} values"
        )
    _, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=arr)
    counts = np.bincount(inverse).astype(np.float64)
    return sums, counts


def _percentiles(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray | None = None,
    *,
    confidence: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Interval:
    """The mean of `values` with a percentile interval from resampling clusters (tasks).

    With `clusters` (a task id per value), whole tasks are drawn with replacement and the
    mean is taken over all episodes of the drawn tasks, so seeds of one task move together.
    One task gives a zero-width interval on n=1: there is nothing to resample.
    """
    _check_confidence(confidence)
    sums, counts = cluster_sums(values, clusters)
    mean = float(sums.sum() / counts.sum())
    n = sums.size
    if n == 1:
        return Interval(mean, mean, mean, confidence, 1)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for start in range(0, n_boot, 256):  # bounded memory: 256 x n indices at a time
        idx = rng.integers(0, n, size=(min(256, n_boot - start), n))
        draws[start : start + idx.shape[0]] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    low, high = _percentiles(draws, confidence)
    return Interval(mean, min(low, mean), max(high, mean), confidence, n)


def pass_at_k_per_task(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass@k of each task (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), as a product."""
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if n.shape != c.shape or np.any(c < 0) or np.any(c > n) or k < 1 or np.any(n < k):
        raise ConfigError(
            f"pass@{k} needs 0 <= correct <= samples and samples >= {k} on every task"
        )
    out = np.ones(n.shape, dtype=np.float64)
    for i, (ni, ci) in enumerate(zip(n.tolist(), c.tolist(), strict=True)):
        if ni - ci >= k:
            out[i] = 1.0 - math.prod(1.0 - k / j for j in range(ni - ci + 1, ni + 1))
    return out


def pass_at_k_interval(
    n: Sequence[int] | np.ndarray,
    c: Sequence[int] | np.ndarray,
    k: int,
    *,
    confidence: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Interval:
    """Mean unbiased pass@k over tasks (n samples, c correct each) with a bootstrap over tasks."""
    return bootstrap_mean(
        pass_at_k_per_task(np.asarray(n), np.asarray(c), k),
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
    )


def _paired(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    a_arr, b_arr = _as_1d(a, "run A"), _as_1d(b, "run B")
    if a_arr.shape != b_arr.shape:
        raise ConfigError(
            f"paired comparison needs one score per task in each run: {a_arr.size} vs {b_arr.size}"
        )
    return a_arr, b_arr


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Interval:
    """Mean of the per-task differences A - B with a bootstrap interval over tasks."""
    a_arr, b_arr = _paired(a, b)
    return bootstrap_mean(a_arr - b_arr, confidence=confidence, n_boot=n_boot, seed=seed)


def mcnemar_exact(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Two-sided exact McNemar p-value for paired 0/1 scores: a binomial test on the discordant pairs."""
    a_arr, b_arr = _paired(a, b)
    if not np.all(np.isin(a_arr, (0.0, 1.0))) or not np.all(np.isin(b_arr, (0.0, 1.0))):
        raise ConfigError("McNemar's test needs 0/1 scores; use permutation_test for graded scores")
    a_only = int(np.sum((a_arr == 1.0) & (b_arr == 0.0)))
    b_only = int(np.sum((a_arr == 0.0) & (b_arr == 1.0)))
    if a_only + b_only == 0:
        return 1.0
    return float(min(1.0, 2.0 * sps.binom.cdf(min(a_only, b_only), a_only + b_only, 0.5)))


def permutation_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    n_perm: int = N_PERM,
    seed: int = 0,
) -> float:
    """Two-sided paired permutation p-value: flip the sign of each task's difference A - B.

    Exact (all 2^m flips of the m non-zero differences) when m <= 16; otherwise `n_perm`
    random flips with the observed statistic counted once, p = (1 + hits) / (1 + n_perm).
    """
    a_arr, b_arr = _paired(a, b)
    d = a_arr - b_arr
    d = d[d != 0.0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    tol = 1e-9 * max(1.0, observed)
    if d.size <= EXACT_PERM_MAX:
        signs = 1.0 - 2.0 * ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1)
        return float(np.mean(np.abs(signs @ d) >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_perm, 1024):
        signs = rng.choice((-1.0, 1.0), size=(min(1024, n_perm - start), d.size))
        hits += int(np.sum(np.abs(signs @ d) >= observed - tol))
    return (1 + hits) / (1 + n_perm)


def is_binary(values: np.ndarray) -> bool:
    return bool(np.all(np.isin(values, (0.0, 1.0))))


def paired_compare(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = 0,
) -> PairedResult:
    """A - B per task: the bootstrap interval of the mean difference and a paired test.

    0/1 scores on both sides (one seed of EM) take McNemar's exact test; anything else
    (F1, means over seeds) takes the sign-flip permutation test.
    """
    a_arr, b_arr = _paired(a, b)
    diff = paired_bootstrap(a_arr, b_arr, confidence=confidence, n_boot=n_boot, seed=seed)
    if is_binary(a_arr) and is_binary(b_arr):
        p, test = mcnemar_exact(a_arr, b_arr), "mcnemar-exact"
    else:
        p, test = permutation_test(a_arr, b_arr, n_perm=n_perm, seed=seed), "permutation"
    return PairedResult(diff, p, test, int(np.sum(a_arr > b_arr)), int(np.sum(a_arr < b_arr)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)):
        raise ConfigError(f"holm: p-values must lie in [0, 1], got {p_values!r}")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out.tolist()


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ConfigError(f"alpha={alpha}, power={power}: both must lie strictly between 0 and 1")
    return float(sps.norm.ppf(1.0 - alpha / 2)), float(sps.norm.ppf(power))


def sample_size(delta: float, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Tasks a two-sided paired test needs to detect a mean difference `delta`.

    Normal approximation: n = ((z_{1-alpha/2} + z_{power}) * sd / delta)^2, rounded up,
    where `sd` is the standard deviation of one task's difference A - B.
    """
    if delta == 0 or sd < 0:
        raise ConfigError(f"delta={delta}, sd={sd}: need a non-zero difference and sd >= 0")
    z_a, z_b = _z(alpha, power)
    return max(1, math.ceil(((z_a + z_b) * sd / abs(delta)) ** 2 - 1e-9))


def detectable_difference(n: int, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference n tasks detect with `power`: (z_{1-alpha/2} + z_{power}) * sd / sqrt(n)."""
    if n < 1 or sd < 0:
        raise ConfigError(f"n={n}, sd={sd}: need n >= 1 and sd >= 0")
    z_a, z_b = _z(alpha, power)
    return (z_a + z_b) * sd / math.sqrt(n)


def achieved_power(n: int, delta: float, sd: float, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired test on n tasks (normal approximation, both tails)."""
    if n < 1 or sd <= 0:
        raise ConfigError(f"n={n}, sd={sd}: need n >= 1 and sd > 0")
    z_a = float(sps.norm.ppf(1.0 - alpha / 2))
    shift = abs(delta) * math.sqrt(n) / sd
    return float(sps.norm.cdf(shift - z_a) + sps.norm.cdf(-shift - z_a))


@dataclass(frozen=True)
class VarianceParts:
    """A run's score variance split into between tasks and between seeds of one task.

    Attributes:
        between: variance of the tasks' true mean scores.
        within: variance of one episode's score around its task's mean.
        tasks, seeds: what the estimate rests on (seeds: the fewest of any task).
    """

    between: float
    within: float
    tasks: int
    seeds: int

    def diff_sd(self, seeds: int, correlation: float = 0.0) -> float:
        """sd of one task's difference A - B, each the mean of `seeds` episodes.

        Both runs are taken to share this variance; `correlation` is that of the two runs'
        task means (0 is conservative: runs on the same questions are usually positively
        correlated, which shrinks the difference's spread).
        """
        if seeds < 1 or not -1.0 <= correlation <= 1.0:
            raise ConfigError(
                f"seeds={seeds}, correlation={correlation}: need seeds >= 1 and |correlation| <= 1"
            )
        return math.sqrt(2.0 * (1.0 - correlation) * self.between + 2.0 * self.within / seeds)


def variance_parts(
    values: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray
) -> VarianceParts:
    """One-way random-effects (ANOVA) estimates of between-task and within-task variance.

    With one seed per task the two cannot be told apart: all variance is counted as
    between tasks (more seeds then do not shrink the planned size, the safe side).
    """
    arr = _as_1d(values, "values")
    sums, counts = cluster_sums(arr, clusters)
    tasks, seeds = sums.size, int(counts.min())
    if tasks < 2:
        raise ConfigError("variance_parts needs at least two tasks")
    means = sums / counts
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    if counts.max() == 1:
        return VarianceParts(float(np.var(arr, ddof=1)), 0.0, tasks, 1)
    within = float(np.sum((arr - means[inverse]) ** 2) / (arr.size - tasks))
    n0 = (arr.size - np.sum(counts**2) / arr.size) / (
        tasks - 1
    )  # the mean seeds per task, ANOVA-weighted
    between_ms = float(np.sum(counts * (means - arr.mean()) ** 2) / (tasks - 1))
    return VarianceParts(max(0.0, (between_ms - within) / n0), within, tasks, seeds)
