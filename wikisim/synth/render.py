"""Deterministic English for constraints: one sentence per fact, about "it" (the answer).

Why templates: the same constraints always read the same way, so a question is
reproducible from its record, and the rewriter's paraphrase can be checked against it.
"""

from __future__ import annotations

import random

from wikisim.synth.constraints import (
    Compare,
    Constraint,
    CountOf,
    DateIn,
    Described,
    Extreme,
    HasAttr,
    IsKind,
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
from wikisim.synth.graph import MENTIONS

KIND_NOUN = {"person": "person", "place": "place", "organisation": "organisation", "work": "work",
             "event": "event", "topic": "subject"}


def humanise(field: str) -> str:
    return field.replace("_", " ").strip()


def number(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.2f}"


def pred_clause(p: Pred) -> str:
    """A relative clause ("whose ...") for a predicate."""
    if isinstance(p, DateIn):
        return f"whose {humanise(p.attr)} falls in {p.label}"
    if isinstance(p, NumberIn):
        unit = f" {p.unit}" if p.unit else ""
        return f"whose {humanise(p.attr)} is between {number(p.lo)} and {number(p.hi)}{unit}"
    if isinstance(p, NameInitials):
        return f"whose name has the initials {p.initials.replace('.', '').replace(' ', '')}"
    if isinstance(p, NameWords):
        return f"whose name is {p.n} word{'s' if p.n != 1 else ''} long"
    if isinstance(p, NameStarts):
        return f"whose name starts with the letter {p.letter}"
    raise TypeError(f"unknown predicate {p!r}")


def target_phrase(t: Target) -> str:
    if isinstance(t, Named):
        return f'"{t.name}"'
    assert isinstance(t, Described)
    noun = t.fine_type or KIND_NOUN.get(t.kind, "entity")
    article = "an" if noun[:1].lower() in "aeiou" else "a"
    return f"{article} {noun} {pred_clause(t.pred)}"


def _unnamed(a: str) -> bool:
    return len(a) <= 3 and a[:1] in "PQRS" and a[1:].isdigit()


def _article(a: str) -> str:
    return "its article" if a == "it" else f"{a}'s article" if _unnamed(a) else f"the article on {a}"


def _possessive(a: str) -> str:
    return "its" if a == "it" else f"{a}'s" if _unnamed(a) else f"the {{}} of {a}"


def hop(a: str, b: str, step: Step) -> str:
    """One link between a and b in words; a is nearer the answer ("it", "page P1", ...)."""
    if step.relation == MENTIONS:
        return f"{_article(a)} links to {b}" if step.direction == "out" else f"{_article(b)} links to {a}"
    rel = humanise(step.relation)
    if step.direction == "in":
        return f"{a} is the {rel} of {b}"
    owner = _possessive(a)
    return f"{owner.format(rel)} is {b}" if "{}" in owner else f"{owner} {rel} is {b}"


def path_sentence(p: Path, negated: bool = False, letter: str = "P") -> str:
    """One link as a sentence; a chain names its unnamed pages `letter`1, `letter`2, ..."""
    if len(p.steps) > 1:
        names = ["it", *(f"{letter}{i}" for i in range(1, len(p.steps))), target_phrase(p.end)]
        hops = [hop(names[i], names[i + 1], s) for i, s in enumerate(p.steps)]
        unnamed = " and ".join(names[1:-1])
        return f"Via unnamed page{'s' if len(p.steps) > 2 else ''} {unnamed}: " + "; ".join(hops) + "."
    first, obj = p.steps[0], target_phrase(p.end)
    if first.relation == MENTIONS:
        if first.direction == "out":
            return f"Its article {'does not link' if negated else 'links'} to {obj}."
        return f"The article on {obj} {'does not link' if negated else 'links'} to it."
    rel = humanise(first.relation)
    if first.direction == "out":
        return f"Its {rel} {'is not' if negated else 'is'} {obj}."
    return f"It {'is not' if negated else 'is'} the {rel} of {obj}."


def _relative(step: Step, obj: str) -> str:
    """Relative clause for an entity one step from obj."""
    if step.relation == MENTIONS:
        return f"whose article links to {obj}" if step.direction == "out" else f"that the article on {obj} links to"
    rel = humanise(step.relation)
    return f"whose {rel} is {obj}" if step.direction == "out" else f"that are the {rel} of {obj}"


def sentence(c: Constraint, letter: str = "P") -> str:
    if isinstance(c, IsKind):
        return f"It is a {KIND_NOUN.get(c.kind, 'entity')}."
    if isinstance(c, HasAttr):
        return "Its" + pred_clause(c.pred)[len("whose"):] + "."
    if isinstance(c, Path):
        return path_sentence(c, letter=letter)
    if isinstance(c, Not):
        if isinstance(c.inner, Path):
            return path_sentence(c.inner, negated=True)
        return "It is not true that its" + pred_clause(c.inner.pred)[len("whose"):] + "."
    if isinstance(c, CountOf):
        names = [target_phrase(a) for a in c.among]
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        return (f"Of {listed}, exactly {c.k} {'is' if c.k == 1 else 'are'} linked with it "
                f"(one's article links to the other's).")
    if isinstance(c, Compare):
        attr = humanise(c.attr)
        word = {"<": "earlier", ">": "later"}[c.op]
        if c.value_kind == "number":
            word = {"<": "smaller", ">": "larger"}[c.op]
        return f"Its {attr} is {word} than that of {target_phrase(c.other)}."
    if isinstance(c, Extreme):
        attr = humanise(c.attr)
        group = _relative(c.group.steps[0], target_phrase(c.group.end))
        word = {"min": "lowest", "max": "highest"}[c.mode]
        if c.value_kind == "date":
            word = {"min": "earliest", "max": "latest"}[c.mode]
        return f"Of all the entities {group}, it has the {word} {attr}."
    raise TypeError(f"unknown constraint {c!r}")


def render(kind: str, constraints: list[Constraint], rng: random.Random) -> str:
    """The question: a lead-in naming the answer's kind, one sentence per constraint, a question."""
    noun = KIND_NOUN.get(kind, "entity")
    parts: list[str] = []
    chains = 0
    for c in constraints:
        if not isinstance(c, IsKind):
            parts.append(sentence(c, "PQRS"[chains % 4]))
            chains += isinstance(c, Path) and len(c.steps) > 1
    body = " ".join(parts)
    templates = (
        f"I am thinking of a {noun}. {body} Which {noun} is it?",
        f"Identify the {noun} described here. {body} What is its name?",
        f"{body} Name this {noun}.",
    )
    return templates[rng.randrange(len(templates))]
