"""Candidate facts about an answer entity, each carrying its kinds of uncertainty.

Why facts rather than finished questions: the pipeline picks a conjunction of facts that
the solver proves unique, so every fact needs its constraint, the uncertainty it adds, the
pages that alone state it (for the "no single page states everything" rule) and the pages
an agent must read to check it. Every fact here is typed: a relation from the vocabulary,
an attribute with its unit, or a letter of the name; never a link between pages.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal

from wikisim.synth.constraints import (
    Compare,
    Constraint,
    CountOf,
    DateIn,
    Described,
    Extreme,
    HasAttr,
    Named,
    NameInitials,
    NameStarts,
    Not,
    NumberIn,
    Path,
    Pred,
    Step,
    Target,
)
from wikisim.synth.english import ATTRIBUTES, RELATIONS, ordinal
from wikisim.synth.factdb import AttrVal, FactDB
from wikisim.synth.kinds import answer_noun
from wikisim.synth.names import display_name, initials
from wikisim.synth.sample import Subgraph
from wikisim.synth.solver import Solver, attr_value

UNCERTAINTY_KINDS = (
    "entity_obfuscation",
    "temporal_fuzzing",
    "numeric_range",
    "partial_identifier",
    "conjunction",
    "comparison_superlative",
    "counting_aggregation",
    "negation_exclusion",
    "relation_chain",
)
_SEASONS = (
    ("spring", (3, 4, 5)),
    ("summer", (6, 7, 8)),
    ("autumn", (9, 10, 11)),
    ("winter", (12, 1, 2)),
)
_DATES = frozenset(
    a
    for a, (vp, *_) in ATTRIBUTES.items()
    if "{v}" in vp and a in ("birth_date", "death_date", "founded", "released", "opened")
)
MAX_NEIGHBOURS = 12
# relations an entity has one value of (two at most: a city and its country): negation and
# counting only over these, where "not related" can be read from the other values
FUNCTIONAL = frozenset(
    (
        "born_in",
        "died_in",
        "buried_in",
        "director",
        "author",
        "composer",
        "headquarters",
        "capital",
        "largest_city",
        "country",
        "place",
        "launch_site",
        "flows_into",
    )
)  # typed neighbours of one entity considered per question
Edge = tuple[int, str, int]


@dataclass(frozen=True)
class Fact:
    constraint: Constraint
    kinds: tuple[str, ...]
    stated_by: frozenset[str]  # URLs of pages that state the whole fact on their own
    urls: tuple[str, ...]  # pages an agent reads to check it
    edges: tuple[Edge, ...] = ()  # typed facts behind it: (subject, relation, object)
    attrs: tuple[tuple[int, str], ...] = ()  # attributes behind it: (entity, attribute)


def fuzz_date(attr: str, a: AttrVal, rng: random.Random) -> DateIn | None:
    """A period around a date, in words: its decade, part of a decade, half a century, a season."""
    year = int(a.value)
    if year < 100:
        return None
    dec = year // 10 * 10
    part = year % 10
    word, lo, hi = ("early", 0, 3) if part <= 3 else ("mid", 4, 6) if part <= 6 else ("late", 7, 9)
    cent = year // 100 * 100
    half_lo = cent if year % 100 < 50 else cent + 50
    century = ordinal(cent // 100 + 1)
    half = "first" if half_lo == cent else "second"
    options = [DateIn(attr, half_lo, half_lo + 49, f"the {half} half of the {century} century")]
    if dec % 100:  # "the 1900s" or "the late 1900s" could mean the whole century
        options += [
            DateIn(attr, dec, dec + 9, f"the {dec}s"),
            DateIn(attr, dec + lo, dec + hi, f"the {word} {dec}s"),
        ]
    if a.month and dec % 100:
        season, months = next(s for s in _SEASONS if a.month in s[1])
        options.append(DateIn(attr, dec, dec + 9, f"the {season} of a year in the {dec}s", months))
    return options[rng.randrange(len(options))]


def fuzz_number(attr: str, a: AttrVal, rng: random.Random) -> NumberIn | None:
    """A round range around a quantity: "between two and three million"."""
    if a.value < 10 or not math.isfinite(a.value):
        return None
    mag = 10 ** math.floor(math.log10(a.value))
    step = mag if rng.random() < 0.5 or a.value < mag * 5 else mag * 5
    lo = math.floor(a.value / step) * step
    return NumberIn(attr, float(lo), float(lo + step), a.unit)


def fuzz(attr: str, a: AttrVal, rng: random.Random) -> tuple[DateIn | NumberIn, str] | None:
    if attr not in ATTRIBUTES:
        return None
    if attr in _DATES:
        d = fuzz_date(attr, a, rng)
        return (d, "temporal_fuzzing") if d is not None else None
    q = fuzz_number(attr, a, rng)
    return (q, "numeric_range") if q is not None else None


def name_pred(title: str, rng: random.Random) -> Pred | None:
    words = display_name(title).split()
    if not words or not words[0][:1].isalpha():
        return None
    options: list[Pred] = [NameStarts(words[0][0].upper())]
    if 2 <= len(words) <= 4 and all(w[:1].isupper() for w in words):
        options.append(NameInitials(initials(title)))
    return options[rng.randrange(len(options))]


class FactFinder:
    """Facts about one answer, from the fact table around it and the walk's subgraph."""

    def __init__(self, db: FactDB, solver: Solver, rng: random.Random, obfuscate: float) -> None:
        self.db, self.solver, self.rng, self.obfuscate = db, solver, rng, obfuscate

    def url(self, edge: Edge) -> str:
        row = self.db.fact(*edge)
        return row.url if row is not None else ""

    def neighbours(self, n: int, prefer: set[int]) -> list[tuple[Step, int, Edge]]:
        """Typed facts of n as (step from n, the other entity, the fact), subgraph members first."""
        out = [(Step(r, "out", k), o, (n, r, o)) for r, o, k in self.db.out(n) if r in RELATIONS]
        out += [(Step(r, "in", k), s, (s, r, n)) for r, s, k in self.db.inc(n) if r in RELATIONS]
        out = [t for t in out if t[1] != n]
        self.rng.shuffle(out)
        out.sort(key=lambda t: t[1] not in prefer)
        return out[:MAX_NEIGHBOURS]

    def target(
        self, node: int
    ) -> tuple[Target, tuple[str, ...], tuple[str, ...], tuple[tuple[int, str], ...]]:
        """The anchor named, or described by its kind and one fuzzed attribute."""
        if self.rng.random() < self.obfuscate:
            e = self.db.entity(node)
            attrs = [(a, v) for a, v in self.db.attrs(node).items() if a in ATTRIBUTES]
            if attrs:
                a, v = attrs[self.rng.randrange(len(attrs))]
                fz = fuzz(a, v, self.rng)
                if fz is not None:
                    d = Described(e.kind, answer_noun(e.kind, e.noun), fz[0])
                    return d, ("entity_obfuscation", fz[1]), (v.url,), ((node, a),)
        return Named(node, self.db.entity(node).title), (), (), ()

    def path_fact(
        self, steps: tuple[Step, ...], nodes: tuple[int, ...], edges: tuple[Edge, ...]
    ) -> Fact:
        end, kinds, attr_urls, attrs = self.target(nodes[-1])
        urls = tuple(self.url(e) for e in edges)
        stated = frozenset(urls[:1]) if len(urls) == 1 else frozenset()
        if attr_urls:
            stated &= frozenset(attr_urls)
        if len(steps) >= 2:
            kinds = (*kinds, "relation_chain")
        return Fact(
            Path(steps, end), kinds, stated, tuple(dict.fromkeys(urls + attr_urls)), edges, attrs
        )

    def facts(self, sub: Subgraph, x: int) -> list[Fact]:
        db, rng = self.db, self.rng
        prefer = set(sub.nodes)
        near = self.neighbours(x, prefer)
        facts: list[Fact] = []
        for step, y, edge in near:
            facts.append(self.path_fact((step,), (x, y), (edge,)))
        pool: list[int] = [n for n in sub.nodes if n != x]
        for step, y, edge in near[:4]:
            if db.entity(y).hub:
                continue
            for step2, z, edge2 in self.neighbours(y, prefer)[:3]:
                if step.relation == step2.relation and (step.direction, step2.direction) == (
                    "in",
                    "out",
                ):
                    continue  # "a place where someone born in Ulm was born": y's other value of one relation
                if z != x and z != y:
                    facts.append(self.path_fact((step, step2), (x, y, z), (edge, edge2)))
                    pool.append(z)
        pool += [y for _, y, _ in near]
        pool = list(dict.fromkeys(n for n in pool if n != x))
        for a, v in db.attrs(x).items():
            fz = fuzz(a, v, rng)
            if fz is not None:
                facts.append(
                    Fact(HasAttr(fz[0]), (fz[1],), frozenset((v.url,)), (v.url,), (), ((x, a),))
                )
        pred = name_pred(db.entity(x).title, rng) if rng.random() < 0.5 else None
        if pred is not None:
            facts.append(Fact(HasAttr(pred), ("partial_identifier",), frozenset(), ()))
        facts += self.exclusions(x, near, pool)
        facts += self.comparisons(x, near, pool)
        return facts

    def decoys(self, x: int, step: Step, pool: list[int]) -> list[int]:
        """Entities of the step's kind that the table shows are NOT related to x by `step`.

        Absence of a fact is no evidence (the table is incomplete), so only a functional
        relation counts, and only where the other side's own value is known and unrelated:
        "not born in Z" needs x's birthplace known and Z not containing or inside it; "is not
        the birthplace of A" needs A's birthplace known, not x and not inside or around x. And Z
        must itself be a value of the relation (someone's birthplace, another country's capital):
        a decoy of the step's kind alone gave "does not have Azerbaijan as its capital" and
        "exactly one of Algeria, Africa and Luanda as its capital"."""
        db = self.db
        if step.relation not in FUNCTIONAL:
            return []

        def apart(values: set[int], other: int) -> bool:
            return other not in values and not any(db.relations(other, v) for v in values)

        out = []
        for z in pool:
            if db_kind(db, z) != step.kind or z == x:
                continue
            if step.direction == "out":
                ok = (
                    apart(db.objects(x, step.relation), z)
                    and bool(db.objects(x, step.relation))
                    and bool(db.subjects(step.relation, z) - {x})
                )
            else:
                theirs = db.objects(z, step.relation)
                ok = bool(theirs) and apart(theirs, x)
            if ok:
                out.append(z)
        return out

    def exclusions(self, x: int, near: list[tuple[Step, int, Edge]], pool: list[int]) -> list[Fact]:
        """Negation ("was not born in Z") and counting ("exactly two of A, B and C")."""
        out: list[Fact] = []
        for step, _, _ in [t for t in near if t[0].relation in FUNCTIONAL][:3]:
            decoys = self.decoys(x, step, pool)
            if not decoys:
                continue
            z = decoys[self.rng.randrange(len(decoys))]
            neg = Path((step,), Named(z, self.db.entity(z).title))
            out.append(
                Fact(Not(neg), ("negation_exclusion",), frozenset(), (self.db.entity(x).url,))
            )
            plain = [
                m for m in decoys if "," not in self.db.entity(m).title
            ]  # commas would blur the list
            related = [m for s, m, _ in near if s == step and "," not in self.db.entity(m).title][
                :2
            ]
            among = sorted({*related, *plain[:2]})
            if len(among) >= 2 and len(related) < len(among):
                names = tuple(Named(a, self.db.entity(a).title) for a in among)
                edges = tuple(e for s, m, e in near if s == step and m in related)
                out.append(
                    Fact(
                        CountOf(names, len(related), step),
                        ("counting_aggregation",),
                        frozenset(),
                        tuple(dict.fromkeys(self.url(e) for e in edges)),
                        edges,
                    )
                )
            break
        return out

    def comparisons(
        self, x: int, near: list[tuple[Step, int, Edge]], pool: list[int]
    ) -> list[Fact]:
        db = self.db
        out: list[Fact] = []
        mine_all = {a: v for a, v in db.attrs(x).items() if a in ATTRIBUTES}
        kind = db.entity(x).kind
        for a, mine in mine_all.items():
            vk: Literal["date", "number"] = "date" if a in _DATES else "number"
            for y in pool:
                theirs = attr_value(db, y, a)
                if theirs is not None and theirs != mine.value and db_kind(db, y) == kind:
                    c = Compare(
                        a, "<" if mine.value < theirs else ">", Named(y, db.entity(y).title), vk
                    )
                    out.append(
                        Fact(
                            c,
                            ("comparison_superlative",),
                            frozenset(),
                            (mine.url, db.attrs(y)[a].url),
                            (),
                            ((x, a), (y, a)),
                        )
                    )
                    break
            for step, y, edge in near:
                group = Path(
                    (Step(step.relation, step.direction, db_kind(db, y)),),
                    Named(y, db.entity(y).title),
                )
                members = self.solver.path_set(group)
                known = [v for m in members if (v := attr_value(db, m, a)) is not None]
                if len(known) < 3:
                    continue
                extremes: tuple[tuple[Literal["min", "max"], float], ...] = (
                    ("min", min(known)),
                    ("max", max(known)),
                )
                for mode, best in extremes:
                    if best == mine.value and known.count(best) == 1:
                        out.append(
                            Fact(
                                Extreme(a, mode, group, vk),
                                ("comparison_superlative",),
                                frozenset(),
                                (self.url(edge), mine.url),
                                (edge,),
                                ((x, a),),
                            )
                        )
                break
        return out


def db_kind(db: FactDB, n: int) -> str:
    return db.entity(n).kind
