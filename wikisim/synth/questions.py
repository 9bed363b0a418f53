"""One question from one subgraph and answer entity: choose facts, prove uniqueness, realise.

Why greedy-then-minimise: adding facts until the solver leaves one entity finds a unique
description fast; removing each fact that is not needed then leaves a conjunction in which,
typically, no single fact identifies the answer on its own.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from wikisim.synth.constraints import (
    Constraint,
    DateIn,
    Described,
    HasAttr,
    IsKind,
    Named,
    NumberIn,
    Path,
    to_dict,
)
from wikisim.synth.english import question
from wikisim.synth.factdb import FactDB
from wikisim.synth.kinds import answer_noun
from wikisim.synth.names import display_name
from wikisim.synth.sample import Subgraph
from wikisim.synth.solver import Solver
from wikisim.synth.uncertainty import Fact, FactFinder

MAX_FACTS = 5
_CAP = 100  # candidate counts above this are reported as the cap


@dataclass(frozen=True)
class Question:
    answer: int
    orbit: tuple[int, ...]
    text: str
    noun: str
    constraints: tuple[Constraint, ...]
    facts: tuple[Fact, ...]
    uncertainty: tuple[str, ...]
    alone: tuple[int, ...]  # candidates each fact leaves on its own (with the kind), capped

    @property
    def level(self) -> int:
        """1: one hop and some fact nearly gives it away; 3: a chain, no fact below three candidates,
        three or more kinds of uncertainty; 2: the rest."""
        hops = max((len(c.steps) for c in self.constraints if isinstance(c, Path)), default=0)
        if hops >= 2 and min(self.alone) >= 3 and len(self.uncertainty) >= 3:
            return 3
        if hops <= 1 and min(self.alone) <= 2:
            return 1
        return 2


def alone(solver: Solver, kind: str, f: Fact) -> int:
    """How many entities of `kind` the fact leaves by itself, capped: a fact whose attribute range
    (or whose described anchor's range) holds more than the cap reports the cap without being
    solved, so the count costs the same on any dump (the one approximation: such a fact is taken
    to leave at least the cap)."""
    head = IsKind(kind)
    c = f.constraint
    pred = (
        c.pred
        if isinstance(c, HasAttr)
        else c.end.pred
        if isinstance(c, Path) and isinstance(c.end, Described)
        else None
    )
    if (
        isinstance(pred, DateIn | NumberIn)
        and solver.db.attr_count(pred.attr, pred.lo, pred.hi, _CAP) >= _CAP
    ):
        return _CAP
    try:
        cands = solver.candidates([head, f.constraint])
    except ValueError:
        return _CAP
    if len(cands) > _CAP:
        return _CAP
    return min(_CAP, sum(solver.holds(head, n) and solver.holds(f.constraint, n) for n in cands))


def touched(f: Fact, x: int) -> set[int]:
    """Entities a fact names or passes through, the answer aside: two facts never share one."""
    return (anchors(f.constraint) | {n for s, _, o in f.edges for n in (s, o)}) - {x}


def anchors(c: Any) -> set[int]:
    """Entities a constraint names (anywhere in its tree)."""
    if isinstance(c, Named):
        return {c.node}
    if isinstance(c, tuple):
        return set().union(*(anchors(x) for x in c)) if c else set()
    if hasattr(c, "__dataclass_fields__"):
        return set().union(*(anchors(getattr(c, f)) for f in c.__dataclass_fields__))
    return set()


def choose_facts(
    solver: Solver, kind: str, x: int, facts: list[Fact], focus: str
) -> tuple[list[Fact] | None, str]:
    """A small set of facts that only x satisfies (with its kind), or (None, drop reason)."""
    seen: dict[int, set[int]] = {}

    def touched_by(f: Fact) -> set[int]:
        if id(f) not in seen:
            seen[id(f)] = touched(f, x)
        return seen[id(f)]

    head = IsKind(kind)
    seed = next((f for f in facts if solver.generator(f.constraint) is not None), None)
    if seed is None:
        return None, "no_anchor"
    pool = solver.solve([head, seed.constraint])
    if x not in pool:
        return None, "inconsistent_fact"
    chosen = [seed]
    used = touched_by(seed)
    for f in facts:
        if len(pool) == 1 or len(chosen) == MAX_FACTS:
            break
        if f is seed or touched_by(f) & used:  # each anchor once: no "born in X ... not born in X"
            continue
        narrowed = solver.narrow(f.constraint, pool)
        if x not in narrowed:
            return None, "inconsistent_fact"
        if len(narrowed) < len(pool):
            chosen.append(f)
            used |= touched_by(f)
            pool = narrowed
    if pool != {x}:
        return None, "not_unique"
    for f in list(reversed(chosen)):
        if focus in f.kinds and sum(focus in g.kinds for g in chosen) == 1:
            continue
        trial = [g for g in chosen if g is not f]
        if (
            trial
            and any(solver.generator(g.constraint) is not None for g in trial)
            and solver.solve([head, *(g.constraint for g in trial)]) == {x}
        ):
            chosen = trial
    used = set().union(*(touched_by(g) for g in chosen))
    unused = [f for f in facts if f not in chosen and not touched_by(f) & used]
    while len(chosen) < 2 and unused:
        chosen.append(unused.pop(0))
    if len(chosen) < 2:
        return None, "too_few_facts"
    common = frozenset.intersection(*(f.stated_by for f in chosen))
    if common:
        return None, "single_page"
    return chosen, ""


def make_question(
    db: FactDB,
    solver: Solver,
    sub: Subgraph,
    x: int,
    orbit: tuple[int, ...],
    rng: random.Random,
    focus: str,
    obfuscate: float = 0.35,
) -> tuple[Question | None, str]:
    """The question whose unique answer is x, or (None, why it was dropped)."""
    e = db.entity(x)
    if not e.answerable:
        return None, "not_an_answer_kind"
    facts = FactFinder(db, solver, rng, obfuscate).facts(sub, x)
    if not facts:
        return None, "no_facts"
    rng.shuffle(facts)
    facts.sort(key=lambda f: (focus not in f.kinds, f.kinds == ("partial_identifier",)))
    chosen, reason = choose_facts(solver, e.kind, x, facts, focus)
    if chosen is None:
        return None, reason
    constraints = (IsKind(e.kind), *(f.constraint for f in chosen))
    if solver.solve(constraints) != {x}:
        return None, "not_unique"
    counts = tuple(alone(solver, e.kind, f) for f in chosen)
    kinds = {k for f in chosen for k in f.kinds}
    if min(counts) > 1:
        kinds.add("conjunction")
    if not kinds:
        return None, "no_uncertainty"
    noun = answer_noun(e.kind, e.noun)
    text = question(noun, e.kind, list(constraints), rng)
    own = display_name(e.title).lower()
    if re.search(rf"\b{re.escape(own)}\b", text, re.IGNORECASE):
        return None, "answer_named"
    if any(display_name(db.entity(n).title).lower() in own for n in anchors(constraints)):
        return (
            None,
            "answer_named",
        )  # "a child of Sir Edward Verner" -> "Sir Edward Verner, 5th Baronet"
    return Question(
        x, orbit, text, noun, constraints, tuple(chosen), tuple(sorted(kinds)), counts
    ), ""


def _node(db: FactDB, n: int) -> dict[str, Any]:
    e = db.entity(n)
    return {"id": n, "title": e.title, "kind": e.kind, "url": e.url, "page": e.page}


def question_record(
    db: FactDB,
    q: Question,
    sub: Subgraph,
    *,
    seed: int,
    manifest_hash: str,
    wl_version: str,
    qid: str,
) -> dict[str, Any]:
    """The JSONL record (a TaskSet task: id, question, answers, evidence, plus our fields)."""
    e = db.entity(q.answer)
    urls = list(dict.fromkeys(u for f in q.facts for u in f.urls if u))
    evidence_facts = []
    for f in q.facts:
        for s, r, o in f.edges:
            row = db.fact(s, r, o)
            if row is not None:
                evidence_facts.append(
                    {
                        "subject": db.entity(s).title,
                        "relation": r,
                        "object": db.entity(o).title,
                        "subject_id": s,
                        "object_id": o,
                        "evidence": row.evidence,
                        "url": row.url,
                        "source": row.source,
                    }
                )
        for n, a in f.attrs:
            v = db.attrs(n).get(a)
            if v is not None:
                evidence_facts.append(
                    {
                        "subject": db.entity(n).title,
                        "attribute": a,
                        "value": v.value,
                        "unit": v.unit,
                        "subject_id": n,
                        "evidence": v.evidence,
                        "url": v.url,
                    }
                )
    aliases = [a for a in db.aliases(e.title) if a != e.title]  # titles that redirect to it
    # the name without its disambiguating parenthesis is right too: "Decomposer" names the album
    # whose page is "Decomposer (album)"
    answers = list(dict.fromkeys([e.title, *aliases, display_name(e.title)]))
    return {
        "id": qid,
        "question": q.text,
        "answer": e.title,
        "answers": answers,
        "aliases": aliases,
        "answer_kind": e.kind,
        "answer_noun": q.noun,
        "answer_has_page": e.page,
        "evidence": urls,
        "answer_node": q.answer,
        "answer_url": e.url,
        "orbit": list(q.orbit),
        "uncertainty": list(q.uncertainty),
        "level": q.level,
        "candidates_alone": list(q.alone),
        "constraints": [to_dict(c) for c in q.constraints],
        "evidence_facts": evidence_facts,
        "subgraph": {
            "nodes": [_node(db, n) for n in sub.nodes],
            "edges": [{"u": u, "v": v, "relation": r} for u, v, r in sub.edges],
            "cyclic": sub.cyclic,
            "typed_cyclic": sub.typed_cyclic,
        },
        "wl_hash": sub.wl_hash,
        "wl_version": wl_version,
        "seed": seed,
        "walk": sub.walk,
        "manifest_hash": manifest_hash,
    }
