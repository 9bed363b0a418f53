"""One question from one subgraph and answer node: choose facts, prove uniqueness, render.

Why greedy-then-minimise: adding facts until the solver leaves one entity finds a
unique description fast; removing each fact that is not needed then leaves a conjunction in
which, typically, no single fact identifies the answer on its own.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from wikisim.synth.constraints import Constraint, IsKind, to_dict
from wikisim.synth.graph import KnowledgeGraph
from wikisim.synth.names import display_name
from wikisim.synth.render import render
from wikisim.synth.sample import Subgraph
from wikisim.synth.solver import Solver
from wikisim.synth.uncertainty import Fact, facts_for

MAX_FACTS = 6


@dataclass(frozen=True)
class Question:
    answer: int
    orbit: tuple[int, ...]
    text: str
    constraints: tuple[Constraint, ...]
    facts: tuple[Fact, ...]
    uncertainty: tuple[str, ...]


def choose_facts(solver: Solver, kind: str, x: int, facts: list[Fact], focus: str) -> tuple[list[Fact] | None, str]:
    """A small set of facts that only x satisfies (with its kind), or (None, drop reason)."""
    head = [IsKind(kind)]
    pool = solver.solve(head)
    chosen: list[Fact] = []
    for f in facts:
        narrowed = solver.narrow(f.constraint, pool)
        if x not in narrowed:
            return None, "inconsistent_fact"
        if len(narrowed) < len(pool):
            chosen.append(f)
            pool = narrowed
        if len(pool) == 1 or len(chosen) == MAX_FACTS:
            break
    if pool != {x}:
        return None, "not_unique"
    for f in list(reversed(chosen)):
        if focus in f.kinds and sum(focus in g.kinds for g in chosen) == 1:
            continue
        trial = [g for g in chosen if g is not f]
        if trial and solver.solve([*head, *(g.constraint for g in trial)]) == {x}:
            chosen = trial
    unused = [f for f in facts if f not in chosen]
    while len(chosen) < 2 and unused:
        chosen.append(unused.pop(0))
    if len(chosen) < 2:
        return None, "too_few_facts"
    common = frozenset.intersection(*(f.stated_by for f in chosen))
    while common and unused:
        f = unused.pop(0)
        if not common <= f.stated_by:
            chosen.append(f)
            common &= f.stated_by
    if common:
        return None, "single_page"
    return chosen, ""


def make_question(kg: KnowledgeGraph, solver: Solver, sub: Subgraph, x: int, orbit: tuple[int, ...],
                  rng: random.Random, focus: str, obfuscate: float = 0.35) -> tuple[Question | None, str]:
    """The question whose unique answer is x, or (None, why it was dropped)."""
    facts = facts_for(kg, solver, sub, x, rng, obfuscate)
    if not facts:
        return None, "no_facts"
    rng.shuffle(facts)
    facts.sort(key=lambda f: focus not in f.kinds)
    kind = kg.entities[x].kind
    chosen, reason = choose_facts(solver, kind, x, facts, focus)
    if chosen is None:
        return None, reason
    constraints = (IsKind(kind), *(f.constraint for f in chosen))
    if solver.solve(constraints) != {x}:
        return None, "not_unique"
    kinds = {k for f in chosen for k in f.kinds}
    if all(len(solver.solve([IsKind(kind), f.constraint])) > 1 for f in chosen):
        kinds.add("conjunction")
    if not kinds:
        return None, "no_uncertainty"
    text = render(kind, list(constraints), rng)
    if re.search(rf"\b{re.escape(display_name(kg.entities[x].title))}\b", text, re.IGNORECASE):
        return None, "answer_named"
    return Question(x, orbit, text, constraints, tuple(chosen), tuple(sorted(kinds))), ""


def _node(kg: KnowledgeGraph, n: int) -> dict[str, Any]:
    """A subgraph node; with the query or URL that found it when the graph came from expansion."""
    e = kg.entities[n]
    out: dict[str, Any] = {"id": n, "title": e.title, "kind": e.kind, "url": e.url}
    if e.provenance:
        out["provenance"] = e.provenance
    return out


def question_record(kg: KnowledgeGraph, q: Question, sub: Subgraph, *, seed: int, manifest_hash: str,
                    wl_version: str, qid: str) -> dict[str, Any]:
    """The JSONL record (a TaskSet task: id, question, answers, evidence, plus our fields)."""
    e = kg.entities[q.answer]
    pages = sorted({q.answer, *(p for f in q.facts for p in f.pages)})
    evidence_edges = []
    for f in q.facts:
        for src, dst, rel in f.edges:
            edge = kg.relations(src, dst).get(rel)
            if edge is not None:
                evidence_edges.append({"src": src, "dst": dst, "relation": rel,
                                       "sentence": edge.sentence, "url": edge.url})
    aliases = sorted(kg.aliases.get(q.answer, ()))
    return {
        "id": qid,
        "question": q.text,
        "answer": e.title,
        "answers": [e.title, *[a for a in aliases if a != e.title]],
        "aliases": aliases,
        "evidence": [kg.entities[p].url for p in pages],
        "answer_node": q.answer,
        "answer_url": e.url,
        "orbit": list(q.orbit),
        "uncertainty": list(q.uncertainty),
        "constraints": [to_dict(c) for c in q.constraints],
        "evidence_pages": [{"id": p, "title": kg.entities[p].title, "url": kg.entities[p].url} for p in pages],
        "evidence_edges": evidence_edges,
        "subgraph": {
            "nodes": [_node(kg, n) for n in sub.nodes],
            "edges": [{"u": u, "v": v, "relation": r} for u, v, r in sub.edges],
            "cyclic": sub.cyclic,
        },
        "wl_hash": sub.wl_hash,
        "wl_version": wl_version,
        "seed": seed,
        "walk": sub.walk,
        "manifest_hash": manifest_hash,
    }
