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
    NameStarts,
    Not,
    NumberIn,
    Path,
    Step,
    from_dict,
    to_dict,
)
from wikisim.synth.factdb import FactDB
from wikisim.synth.questions import choose_facts
from wikisim.synth.solver import Solver
from wikisim.synth.uncertainty import Fact
from wikisim.synth.verify import Reverifier

BORN = Step("born_in", "out", "place")
BORN_IN_OLDTOWN = Path((BORN,), Named(10, "Oldtown"))
PERSON = IsKind("person")
CASES = [
    ([PERSON, BORN_IN_OLDTOWN], {1, 2}),
    # born in the town where Eva Fink was born (a chain through an unnamed place)
    ([PERSON, Path((BORN, Step("born_in", "in", "person")), Named(3, "Eva Fink"))], {3, 4}),
    (
        [Path((BORN,), Described("place", "town", NumberIn("population", 40000, 50000, "people")))],
        {1, 2},
    ),
    ([Extreme("birth_date", "min", BORN_IN_OLDTOWN, "date")], {2}),
    ([PERSON, BORN_IN_OLDTOWN, Compare("birth_date", "<", Named(1, "Anna Berg"), "date")], {2}),
    ([PERSON, BORN_IN_OLDTOWN, HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s"))], {1}),
    (
        [PERSON, BORN_IN_OLDTOWN, HasAttr(DateIn("birth_date", 1870, 1879, "spring", (3, 4, 5)))],
        set(),
    ),
    (
        [
            PERSON,
            BORN_IN_OLDTOWN,
            Not(Path((Step("creator", "in", "work"),), Named(20, "The Blue Hour"))),
        ],
        {2},
    ),
    ([PERSON, CountOf((Named(10, "Oldtown"), Named(11, "Newport")), 1, BORN)], {1, 2, 3, 4}),
    ([PERSON, BORN_IN_OLDTOWN, HasAttr(NameStarts("C"))], {2}),
]


def test_solver_and_sql_reverifier_agree_on_every_kind_of_constraint(world: FactDB):
    solver, sql = Solver(world), Reverifier(world.path)
    for constraints, expected in CASES:
        assert solver.solve(constraints) == expected, constraints
        assert set(sql.satisfying([to_dict(c) for c in constraints])) == expected, constraints


def test_constraints_round_trip_through_json():
    c = Extreme(
        "birth_date",
        "min",
        Path(
            (BORN,),
            Described(
                "place", "town", DateIn("founded", 1700, 1749, "the first half of the 18th century")
            ),
        ),
        "date",
    )
    assert from_dict(to_dict(c)) == c


def test_question_that_two_entities_satisfy_is_dropped(world: FactDB):
    s = Solver(world)
    url = "https://en.wikipedia.org/wiki/Anna_Berg"
    ambiguous = [Fact(BORN_IN_OLDTOWN, (), frozenset({url}), (url,))]
    assert choose_facts(s, "person", 1, ambiguous, "relation_chain") == (None, "not_unique")
    born_1880s = Fact(
        HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s")),
        ("temporal_fuzzing",),
        frozenset(),
        (url,),
    )
    chosen, reason = choose_facts(s, "person", 1, [*ambiguous, born_1880s], "temporal_fuzzing")
    assert reason == "" and chosen is not None
    assert s.solve([PERSON, *(f.constraint for f in chosen)]) == {1}


def test_question_stated_by_one_page_is_dropped(world: FactDB):
    s = Solver(world)
    url = "https://en.wikipedia.org/wiki/Anna_Berg"
    only_annas_page = [
        Fact(BORN_IN_OLDTOWN, (), frozenset({url}), (url,)),
        Fact(HasAttr(DateIn("birth_date", 1880, 1889, "the 1880s")), (), frozenset({url}), (url,)),
    ]
    assert choose_facts(s, "person", 1, only_annas_page, "conjunction") == (None, "single_page")
