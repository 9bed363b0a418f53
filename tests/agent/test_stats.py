"""agent.eval.stats against closed-form values: interval widths, paired tests, Holm, power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from agent.eval.stats import (
    VarianceParts,
    achieved_power,
    bootstrap_mean,
    detectable_difference,
    holm,
    mcnemar_exact,
    paired_compare,
    pass_at_k_interval,
    pass_at_k_per_task,
    permutation_test,
    sample_size,
    variance_parts,
)
from wikisim.errors import ConfigError


def test_one_seed_on_500_questions_has_the_normal_approximation_width() -> None:
    rng = np.random.default_rng(1)
    scores = (rng.random(500) < 0.122).astype(float)
    p = scores.mean()
    ci = bootstrap_mean(scores, seed=0)
    normal = 1.959964 * math.sqrt(p * (1 - p) / 500)
    assert ci.n == 500
    assert ci.low < p < ci.high
    assert ci.half_width == pytest.approx(normal, rel=0.1)
    assert 0.02 < ci.half_width < 0.04  # the "about +-0.03", never +-0.000


def test_seeds_of_one_task_are_resampled_together() -> None:
    """Three identical seeds per task carry no more evidence than one: same width as one seed."""
    rng = np.random.default_rng(2)
    per_task = (rng.random(400) < 0.5).astype(float)
    tasks = np.repeat(np.arange(400), 3)
    clustered = bootstrap_mean(np.repeat(per_task, 3), tasks, seed=0)
    naive = bootstrap_mean(np.repeat(per_task, 3), seed=0)
    single = bootstrap_mean(per_task, seed=0)
    assert clustered.n == 400
    assert clustered.half_width == pytest.approx(single.half_width, rel=0.05)
    assert naive.half_width < 0.7 * clustered.half_width  # episodes as units would claim too much


def test_bootstrap_is_reproducible_and_seeded() -> None:
    x = np.arange(50) % 7 / 7.0
    assert bootstrap_mean(x, seed=3) == bootstrap_mean(x, seed=3)
    assert bootstrap_mean(x, seed=3) != bootstrap_mean(x, seed=4)
    assert bootstrap_mean([0.4]).half_width == 0.0


def test_pass_at_k_matches_the_closed_form() -> None:
    n, c = np.array([5, 5, 5, 4]), np.array([0, 1, 5, 2])
    expected = [1 - math.comb(ni - ci, 2) / math.comb(ni, 2) for ni, ci in zip(n, c, strict=True)]
    assert pass_at_k_per_task(n, c, 2) == pytest.approx(expected)
    ci = pass_at_k_interval(n, c, 2)
    assert ci.mean == pytest.approx(np.mean(expected))
    assert ci.low <= ci.mean <= ci.high
    with pytest.raises(ConfigError):
        pass_at_k_per_task(np.array([2]), np.array([1]), 3)


def _planted(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """500 paired 0/1 questions; B gains 45 and loses 20: a planted 5-point difference."""
    a = (rng.random(500) < 0.4).astype(float)
    b = a.copy()
    zeros, ones = np.flatnonzero(a == 0), np.flatnonzero(a == 1)
    b[rng.choice(zeros, 45, replace=False)] = 1.0
    b[rng.choice(ones, 20, replace=False)] = 0.0
    return a, b


def test_a_planted_five_point_difference_is_found() -> None:
    a, b = _planted(np.random.default_rng(5))
    result = paired_compare(b, a)
    assert result.test == "mcnemar-exact"
    assert result.diff.mean == pytest.approx(0.05)
    assert result.diff.low > 0.0
    assert result.p_value == pytest.approx(2 * sps.binom.cdf(20, 65, 0.5))
    assert result.p_value < 0.01
    assert (result.a_better, result.b_better) == (45, 20)
    # graded scores take the permutation test, which agrees
    assert permutation_test(b + 0.01 * a, a, seed=0) < 0.01


def test_identical_runs_show_no_difference() -> None:
    a, _ = _planted(np.random.default_rng(6))
    result = paired_compare(a, a.copy())
    assert result.p_value == 1.0
    assert (result.diff.mean, result.diff.low, result.diff.high) == (0.0, 0.0, 0.0)
    assert permutation_test(a * 0.5, a * 0.5) == 1.0


def test_mcnemar_and_exact_permutation_closed_forms() -> None:
    a = np.array([1, 1, 1, 1, 0, 0, 1, 0], dtype=float)
    b = np.array([0, 0, 0, 1, 1, 0, 1, 0], dtype=float)  # 3 pairs for A, 1 for B
    assert mcnemar_exact(a, b) == pytest.approx(2 * sps.binom.cdf(1, 4, 0.5))  # 0.625
    # exact sign-flip on differences (1, 1, 1, -1): |sum| >= 2 in 10 of 16 flips
    assert permutation_test(a, b) == pytest.approx(10 / 16)
    with pytest.raises(ConfigError, match="0/1"):
        mcnemar_exact(a * 0.5, b)
    with pytest.raises(ConfigError, match="one score per task"):
        paired_compare(a, b[:-1])


def test_permutation_under_the_null_is_uniform_enough() -> None:
    """Under no difference, p < 0.05 in about 5% of experiments."""
    rng = np.random.default_rng(7)
    rejections = sum(
        permutation_test(rng.normal(size=60), rng.normal(size=60), n_perm=999, seed=i) < 0.05
        for i in range(200)
    )
    assert 2 <= rejections <= 20


def test_holm_adjusts_step_down() -> None:
    # m=4: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06 (monotone), 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    with pytest.raises(ConfigError):
        holm([1.5])


def test_sample_size_matches_the_textbook_formula() -> None:
    # sd 1, delta 0.2, alpha 0.05, power 0.8: (1.959964 + 0.841621)^2 / 0.04 = 196.2 -> 197
    assert sample_size(0.2, 1.0) == 197
    assert sample_size(-0.2, 1.0) == 197
    # power 0.9: (1.959964 + 1.281552)^2 * 25 = 262.7 -> 263
    assert sample_size(0.2, 1.0, power=0.9) == 263
    n = sample_size(0.03, 0.3)
    assert achieved_power(n, 0.03, 0.3) >= 0.8 > achieved_power(n - 5, 0.03, 0.3)
    assert achieved_power(197, 0.2, 1.0) == pytest.approx(0.8, abs=0.005)
    assert detectable_difference(197, 1.0) == pytest.approx(
        (1.959964 + 0.841621) / math.sqrt(197), rel=1e-5
    )
    assert detectable_difference(sample_size(0.03, 0.3), 0.3) <= 0.03


def test_power_is_right_by_simulation() -> None:
    """The planned size detects the difference in about `power` of simulated experiments."""
    rng = np.random.default_rng(8)
    n = sample_size(0.25, 1.0)  # 126
    hits = sum(
        permutation_test(rng.normal(0.25, 1.0, n), np.zeros(n), n_perm=499, seed=i) < 0.05
        for i in range(200)
    )
    assert 0.7 <= hits / 200 <= 0.9


def test_variance_parts_recover_planted_components() -> None:
    rng = np.random.default_rng(9)
    task_means = rng.normal(0.0, 2.0, 2000)  # between 4
    values = np.repeat(task_means, 4) + rng.normal(0.0, 1.0, 8000)  # within 1
    parts = variance_parts(values, np.repeat(np.arange(2000), 4))
    assert parts.between == pytest.approx(4.0, rel=0.1)
    assert parts.within == pytest.approx(1.0, rel=0.05)
    assert (parts.tasks, parts.seeds) == (2000, 4)
    # sd of a task's A - B with s seeds: sqrt(2 (1 - rho) between + 2 within / s)
    assert VarianceParts(4.0, 1.0, 10, 2).diff_sd(4, 0.5) == pytest.approx(math.sqrt(4.0 + 0.5))
    one_seed = variance_parts(np.array([0.0, 1.0, 1.0, 0.0]), np.arange(4))
    assert (one_seed.between, one_seed.within) == (pytest.approx(1 / 3), 0.0)
