"""Candidate facts about an answer node, each carrying its kinds of uncertainty.

Why facts rather than finished questions: the pipeline picks a conjunction of facts that
the solver proves unique, so every fact needs its constraint, the uncertainty it adds, the
pages that alone state it (for the "no single page states everything" rule) and the
pages an agent must read to check it (the evidence).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal

import networkx as nx

from wikisim.synth.attrs import Date, Quantity
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
    NameWords,
    Not,
    NumberIn,
    Path,
    Pred,
    Step,
    Target,
)
from wikisim.synth.graph import MENTIONS, KnowledgeGraph
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
_SEASONS = (("spring", (3, 4, 5)), ("summer", (6, 7, 8)), ("autumn", (9, 10, 11)), ("winter", (12, 1, 2)))


@dataclass(frozen=True)
class Fact:
    constraint: Constraint
    kinds: tuple[str, ...]
    stated_by: frozenset[int]  # pages that state the whole fact on their own
    pages: tuple[int, ...]  # pages an agent reads to check it
    edges: tuple[tuple[int, int, str], ...] = ()  # (src, dst, relation) links behind it


def fuzz_date(attr: str, d: Date, rng: random.Random) -> DateIn | None:
    """A period around d: its decade, part of a decade, half-century, or a season in a decade.

    None for years before 1 AD: periods "BC" run backwards and read ambiguously.
    """
    if d.year < 1:
        return None
    dec = d.year // 10 * 10
    part = d.year % 10
    word, lo, hi = ("early", 0, 3) if part <= 3 else ("mid", 4, 6) if part <= 6 else ("late", 7, 9)
    cent = d.year // 100 * 100
    half_lo = cent if d.year % 100 < 50 else cent + 50
    options = [
        DateIn(attr, dec, dec + 9, f"the {dec}s"),
        DateIn(attr, dec + lo, dec + hi, f"the {word} {dec}s"),
        DateIn(attr, half_lo, half_lo + 49, f"the {'first' if half_lo == cent else 'second'} half of the {cent}s"),
    ]
    if d.month:
        season, months = next(s for s in _SEASONS if d.month in s[1])
        options.append(DateIn(attr, dec, dec + 9, f"a {season} month of the {dec}s", months))
    return options[rng.randrange(len(options))]


def fuzz_number(attr: str, q: Quantity, rng: random.Random) -> NumberIn | None:
    """A round range containing q: "between 40,000 and 50,000"."""
    if q.value <= 0 or not math.isfinite(q.value):
        return None
    mag = 10 ** math.floor(math.log10(q.value))
    step = mag if rng.random() < 0.5 or q.value < mag * 5 else mag * 5
    lo = math.floor(q.value / step) * step
    return NumberIn(attr, float(lo), float(lo + step), q.unit)


def name_pred(title: str, rng: random.Random) -> Pred | None:
    words = display_name(title).split()
    if not words or not words[0][:1].isalnum():
        return None
    options: list[Pred] = [NameWords(len(words)), NameStarts(words[0][0].upper())]
    if len(words) >= 2:
        options.append(NameInitials(initials(title)))
    return options[rng.randrange(len(options))]


def fuzz_attrs(kg: KnowledgeGraph, node: int, rng: random.Random) -> list[tuple[Pred, str]]:
    """Every fuzzable attribute of node as (predicate, uncertainty kind)."""
    out: list[tuple[Pred, str]] = []
    for a in kg.entities[node].attributes:
        if a.date is not None:
            date = fuzz_date(a.name, a.date, rng)
            if date is not None:
                out.append((date, "temporal_fuzzing"))
        elif a.quantity is not None:
            num = fuzz_number(a.name, a.quantity, rng)
            if num is not None:
                out.append((num, "numeric_range"))
    return out


def describe(kg: KnowledgeGraph, node: int, rng: random.Random) -> tuple[Described, tuple[str, ...]] | None:
    """Entity obfuscation: a name becomes its type plus one fuzzed fact."""
    e = kg.entities[node]
    preds = fuzz_attrs(kg, node, rng)
    if preds:
        pred, kind = preds[rng.randrange(len(preds))]
        return Described(e.kind, e.fine_type, pred), ("entity_obfuscation", kind)
    pred = name_pred(e.title, rng)
    if pred is None or not e.fine_type:
        return None
    return Described(e.kind, e.fine_type, pred), ("entity_obfuscation", "partial_identifier")


def step_between(kg: KnowledgeGraph, a: int, b: int, rng: random.Random) -> tuple[Step, tuple[int, int, str]] | None:
    """How a reaches b in one link: a typed relation if there is one, else a plain link."""
    options = [(Step(r, "out"), (a, b, r)) for r in sorted(kg.relations(a, b))]
    options += [(Step(r, "in"), (b, a, r)) for r in sorted(kg.relations(b, a))]
    if not options:
        return None
    typed = [o for o in options if o[0].relation != MENTIONS]
    pool = typed or options
    return pool[rng.randrange(len(pool))]


def _target(kg: KnowledgeGraph, node: int, rng: random.Random, obfuscate: float) -> tuple[Target, tuple[str, ...], frozenset[int]]:
    """The anchor named, or described; and the pages that state the description."""
    if rng.random() < obfuscate:
        desc = describe(kg, node, rng)
        if desc is not None:
            return desc[0], desc[1], frozenset((node,))
    return Named(node, kg.entities[node].title), (), frozenset()


def _path_fact(kg: KnowledgeGraph, path: list[int], rng: random.Random, obfuscate: float) -> Fact | None:
    steps: list[Step] = []
    edges: list[tuple[int, int, str]] = []
    for a, b in zip(path, path[1:], strict=False):
        s = step_between(kg, a, b, rng)
        if s is None:
            return None
        steps.append(s[0])
        edges.append(s[1])
    end, kinds, desc_pages = _target(kg, path[-1], rng, obfuscate)
    stated: frozenset[int] | None = None
    for src, _, _ in edges:
        stated = frozenset((src,)) if stated is None else stated & {src}
    if desc_pages:
        stated = (stated or frozenset()) & desc_pages
    if len(steps) >= 2:
        kinds = (*kinds, "relation_chain")
    return Fact(Path(tuple(steps), end), kinds, stated or frozenset(), tuple(path), tuple(edges))


def facts_for(kg: KnowledgeGraph, solver: Solver, sub: Subgraph, x: int, rng: random.Random,
              obfuscate: float = 0.35) -> list[Fact]:
    """Every candidate fact about x that the subgraph supports (deterministic given rng)."""
    g = nx.Graph()
    g.add_nodes_from(sub.nodes)
    g.add_edges_from((u, v) for u, v, _ in sub.edges)
    others = [n for n in sub.nodes if n != x]
    facts: list[Fact] = []
    paths = nx.single_source_shortest_path(g, x, cutoff=4)
    for y in others:
        if y in paths:
            f = _path_fact(kg, paths[y], rng, obfuscate)
            if f is not None:
                facts.append(f)
    for pred, kind in fuzz_attrs(kg, x, rng):
        facts.append(Fact(HasAttr(pred), (kind,), frozenset((x,)), (x,)))
    pred = name_pred(kg.entities[x].title, rng)
    if pred is not None:
        facts.append(Fact(HasAttr(pred), ("partial_identifier",), frozenset((x,)), (x,)))
    nbrs = kg.neighbors(x)
    far = [z for z in others if z not in nbrs]
    if far:
        z = far[rng.randrange(len(far))]
        direction = "in" if kg.successors(z) else "out"
        facts.append(Fact(Not(Path((Step(MENTIONS, direction),), Named(z, kg.entities[z].title))),
                          ("negation_exclusion",), frozenset((x,)), (x, z)))
    among = others[:5]
    linked = [a for a in among if a in nbrs]
    if len(among) >= 2 and 0 < len(linked) < len(among):  # "2 of 2" would just be two links
        stated = frozenset.intersection(*[
            frozenset(src for src, dst in ((x, a), (a, x)) if kg.relations(src, dst)) for a in linked
        ])
        facts.append(Fact(CountOf(tuple(Named(a, kg.entities[a].title) for a in among), len(linked)),
                          ("counting_aggregation",), stated, (x, *among)))
    facts.extend(_comparisons(kg, solver, x, others, rng))
    return facts


def _comparisons(kg: KnowledgeGraph, solver: Solver, x: int, others: list[int], rng: random.Random) -> list[Fact]:
    ex = kg.entities[x]
    out: list[Fact] = []
    for a in ex.attributes:
        mine = attr_value(ex, a.name)
        if mine is None:
            continue
        vk: Literal["date", "number"] = "date" if a.date is not None else "number"
        for y in others:
            theirs = attr_value(kg.entities[y], a.name)
            if theirs is not None and theirs != mine:
                c = Compare(a.name, "<" if mine < theirs else ">", Named(y, kg.entities[y].title), vk)
                out.append(Fact(c, ("comparison_superlative",), frozenset(), (x, y)))
                break
        for y in others:
            s = step_between(kg, x, y, rng)
            if s is None:
                continue
            group = Path((s[0],), Named(y, kg.entities[y].title))
            members = solver.path_set(group)
            values = [attr_value(kg.entities[m], a.name) for m in members]
            known = [v for v in values if v is not None]
            if len(known) < 2:
                continue
            for mode, best in (("min", min(known)), ("max", max(known))):
                if best == mine and known.count(best) == 1:
                    out.append(Fact(Extreme(a.name, mode, group, vk), ("comparison_superlative",),
                                    frozenset(), (x, y), (s[1],)))
            break
    return out
