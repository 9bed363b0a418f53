from __future__ import annotations

from wikisim.synth.constraints import (
    Compare,
    CountOf,
    DateIn,
    Described,
    Extreme,
    HasAttr,
    IsKind,
    Named,
    Not,
    NumberIn,
    Path,
    Step,
    from_dict,
    to_dict,
)
from wikisim.synth.graph import MENTIONS
from wikisim.synth.questions import choose_facts
from wikisim.synth.solver import Solver
from wikisim.synth.uncertainty import Fact

BORN_IN_OLDTOWN = Path((Step("birth_place", "out"),), Named(10, "Oldtown"))


def test_solver_follows_relations_chains_and_aggregates(world):
    s = Solver(world)
    assert s.solve([IsKind("person"), BORN_IN_OLDTOWN]) == {1, 2}
    chain = Path((Step("birth_place", "out"), Step(MENTIONS, "out")), Named(11, "Newport"))
    assert s.solve([IsKind("person"), chain]) == {1, 2}  # born in a town whose article links to Newport
    big_town = Described("place", "settlement", NumberIn("population_total", 40000, 50000))
    assert s.solve([Path((Step("birth_place", "out"),), big_town)]) == {1, 2}
    assert s.solve([Extreme("birth_date", "min", BORN_IN_OLDTOWN, "date")]) == {2}
    assert s.solve([IsKind("person"), Compare("birth_date", "<", Named(2, "Carl Dorn"), "date")]) == {4}
    assert s.solve([IsKind("person"), HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s"))]) == {1}
    assert s.solve([IsKind("person"), BORN_IN_OLDTOWN, Not(Path((Step(MENTIONS, "in"),), Named(4, "Gus Hale")))]) == {2}
    among = (Named(1, "Anna Berg"), Named(3, "Eva Fink"), Named(12, "Riverside"))
    assert s.solve([IsKind("person"), CountOf(among, 2)]) == {2}  # Anna links to Carl, Carl to Eva
    assert s.solve([IsKind("person"), CountOf(among, 1)]) == {4, 5}


def test_constraints_round_trip_through_json(world):
    c = Extreme("birth_date", "min", Path((Step("birth_place", "out"),),
                Described("place", "settlement", DateIn("established", 1700, 1749, "the first half of the 1700s"))), "date")
    assert from_dict(to_dict(c)) == c


def test_question_that_two_entities_satisfy_is_dropped(world):
    s = Solver(world)
    ambiguous = [Fact(BORN_IN_OLDTOWN, (), frozenset({1}), (1, 10))]
    assert choose_facts(s, "person", 1, ambiguous, "relation_chain") == (None, "not_unique")
    born_1880s = Fact(HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s")), ("temporal_fuzzing",), frozenset({1}), (1,))
    linked_from_gus = Fact(Path((Step(MENTIONS, "in"),), Named(4, "Gus Hale")), (), frozenset({4}), (4, 1))
    chosen, reason = choose_facts(s, "person", 1, [*ambiguous, born_1880s, linked_from_gus], "temporal_fuzzing")
    assert reason == "" and chosen is not None
    assert s.solve([IsKind("person"), *(f.constraint for f in chosen)]) == {1}


def test_question_stated_by_one_page_is_dropped(world):
    s = Solver(world)
    only_annas_page = [
        Fact(BORN_IN_OLDTOWN, (), frozenset({1}), (1, 10)),
        Fact(HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s")), (), frozenset({1}), (1,)),
    ]
    assert choose_facts(s, "person", 1, only_annas_page, "conjunction") == (None, "single_page")
