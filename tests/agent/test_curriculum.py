"""The data-policy loop: retirement of settled questions, top-up in band, composition, state."""

from __future__ import annotations

import pytest

from agent.train.curriculum import Curriculum, CurriculumConfig
from wikisim.errors import ConfigError

IDS = [f"q{i}" for i in range(6)]
TAGS = {
    t: {"uncertainty": "date" if i % 2 else "count", "structure": "chain"}
    for i, t in enumerate(IDS)
}


def test_retires_always_and_never_solved_and_tops_up():
    cur = Curriculum(IDS, CurriculumConfig(pool_size=3, retire_after=4), seed=1, tags=TAGS)
    first = list(cur.pool)
    assert len(first) == 3 and len(cur.fresh) == 3
    easy, hard, mid = first
    results = (
        [(easy, True)] * 4
        + [(hard, False)] * 4
        + [(mid, True), (mid, False), (mid, True), (mid, False)]
    )
    retired = cur.update(results)
    assert sorted(retired) == sorted([(easy, "solved"), (hard, "unsolved")])
    assert mid in cur.pool and len(cur.pool) == 3 and len(cur.fresh) == 1
    comp = cur.composition()
    assert comp["retired_solved"] == 1 and comp["retired_unsolved"] == 1
    assert sum(comp["by_uncertainty"].values()) == 3 and comp["by_structure"] == {"chain": 3}
    assert comp["pool_mean_pass_rate"] == pytest.approx(0.5)


def test_not_retired_before_enough_visits():
    cur = Curriculum(IDS, CurriculumConfig(pool_size=2, retire_after=4))
    tid = cur.pool[0]
    assert cur.update([(tid, True)] * 3) == []


def test_next_questions_prefers_least_visited():
    cur = Curriculum(IDS, CurriculumConfig(pool_size=3, retire_after=100))
    a, b, c = cur.pool
    cur.update([(a, True), (a, False), (b, True)])
    assert cur.next_questions(4) == [c, b, a, c]


def test_prior_outside_band_is_skipped():
    prior = {"q0": 1.0, "q1": 0.0}
    cur = Curriculum(IDS, CurriculumConfig(pool_size=6, band_low=0.0, band_high=1.0), prior=prior)
    assert sorted(cur.skipped) == ["q0", "q1"] and len(cur.pool) == 4


def test_state_round_trip_and_determinism():
    cfg = CurriculumConfig(pool_size=3, retire_after=2, max_rollouts=3)
    a = Curriculum(IDS, cfg, seed=3)
    a.update([(a.pool[0], True), (a.pool[0], True), (a.pool[1], True), (a.pool[1], False)])
    a.update([(a.pool[0], False)])
    b = Curriculum(IDS, cfg, seed=3)
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()
    assert Curriculum(IDS, cfg, seed=3).pool == Curriculum(IDS, cfg, seed=3).pool


def test_bad_config_and_empty_pool():
    with pytest.raises(ConfigError, match="band_low"):
        CurriculumConfig(band_low=0.6, band_high=0.5)
    with pytest.raises(ConfigError, match="max_rollouts"):
        CurriculumConfig(max_rollouts=-1)
    cur = Curriculum(["x"], CurriculumConfig(pool_size=1, retire_after=1))
    cur.update([("x", True)])
    with pytest.raises(ConfigError, match="pool is empty"):
        cur.next_questions(1)


def test_a_question_leaves_after_max_rollouts_and_comes_back_once_none_is_fresh():
    cur = Curriculum(IDS, CurriculumConfig(pool_size=2, retire_after=100, max_rollouts=2), seed=1)
    order = cur.pool + cur.fresh
    a, b, c, d, e, f = order

    def one_group_each() -> list[tuple[str, str]]:
        return cur.update([(t, ok) for t in list(cur.pool) for ok in (True, False)])

    assert cur.update([(a, True), (a, False)]) == [(a, "spent")]  # in band, but spent
    assert cur.pool == [b, c] and cur.fresh == [d, e, f]
    assert one_group_each() == [(b, "spent"), (c, "spent")] and cur.pool == [d, e]
    assert cur.composition()["retired_spent"] == 3
    one_group_each()  # d and e leave, f is the last fresh one: a second pass begins with a
    assert cur.pool == [f, a] and cur.fresh == [b, c, d, e]
    assert cur.update([(a, True)]) == []  # its count restarted when it came back
    assert cur.update([(a, False)]) == [(a, "spent")] and cur.pool == [f, b]
    settled = Curriculum(IDS, CurriculumConfig(pool_size=2, retire_after=2, max_rollouts=2), seed=1)
    assert settled.update([(a, True), (a, True)]) == [(a, "solved")]  # the band decides first


def test_a_spent_question_returns_only_if_its_own_pass_rate_is_in_band():
    cur = Curriculum(IDS, CurriculumConfig(pool_size=6, retire_after=100, max_rollouts=1))
    never, *rest = cur.pool
    cur.update([(never, False)] + [(t, True) for t in rest[:2]] + [(t, False) for t in rest[2:]])
    assert cur.pool == [] and sorted(cur.skipped) == sorted(IDS)  # 0 or 1 so far: none returns
    with pytest.raises(ConfigError, match="pool is empty"):
        cur.next_questions(1)
