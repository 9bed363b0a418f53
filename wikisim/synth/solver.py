"""The solver: every entity of the whole graph that satisfies a conjunction of constraints.

Why set algebra: relation constraints give candidate sets straight from the adjacency
(paths are followed backwards from their end), so a question is checked against all
entities without scanning them; predicate-only constraints then filter the survivors.
"""

from __future__ import annotations

from collections.abc import Sequence

from wikisim.synth.constraints import (
    Compare,
    Constraint,
    CountOf,
    DateIn,
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
    Target,
)
from wikisim.synth.graph import MENTIONS, Entity, KnowledgeGraph
from wikisim.synth.names import display_name, initials

_MEMO_LIMIT = 100_000


def pred_holds(pred: Pred, e: Entity) -> bool:
    if isinstance(pred, DateIn):
        a = e.attr(pred.attr)
        if a is None or a.date is None or not pred.lo <= a.date.year <= pred.hi:
            return False
        return not pred.months or a.date.month in pred.months
    if isinstance(pred, NumberIn):
        a = e.attr(pred.attr)
        return a is not None and a.quantity is not None and pred.lo <= a.quantity.value <= pred.hi
    if isinstance(pred, NameInitials):
        return initials(e.title) == pred.initials
    if isinstance(pred, NameWords):
        return len(display_name(e.title).split()) == pred.n
    if isinstance(pred, NameStarts):
        return display_name(e.title)[:1].upper() == pred.letter
    raise TypeError(f"unknown predicate {pred!r}")


def attr_value(e: Entity, attr: str) -> float | None:
    """Comparable value: a date's year (dates differ in precision), or a quantity's value."""
    a = e.attr(attr)
    if a is None:
        return None
    if a.date is not None:
        return float(a.date.year)
    return a.quantity.value if a.quantity is not None else None


class Solver:
    """Set algebra over indexes: by kind, by (kind, fine type), by attribute name, by name shape."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.kg = kg
        self.all = frozenset(kg.entities)
        self.by_kind: dict[str, set[int]] = {}
        self.by_type: dict[tuple[str, str], set[int]] = {}
        self.by_attr: dict[str, set[int]] = {}
        self.by_name: dict[Pred, set[int]] = {}
        for n, e in kg.entities.items():
            self.by_kind.setdefault(e.kind, set()).add(n)
            self.by_type.setdefault((e.kind, e.fine_type), set()).add(n)
            for a in e.attributes:
                self.by_attr.setdefault(a.name, set()).add(n)
            words = display_name(e.title).split()
            keys: list[Pred] = [NameWords(len(words)), NameInitials(initials(e.title))]
            if words:
                keys.append(NameStarts(words[0][:1].upper()))
            for key in keys:
                self.by_name.setdefault(key, set()).add(n)
        self._memo: dict[object, frozenset[int]] = {}

    def _remember(self, key: object, value: set[int]) -> frozenset[int]:
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        out = self._memo[key] = frozenset(value)
        return out

    def pred_set(self, pred: Pred, pool: set[int] | frozenset[int] | None = None) -> set[int]:
        """Entities (of pool, if given) whose attribute or name satisfies pred."""
        if isinstance(pred, DateIn | NumberIn):
            base = self.by_attr.get(pred.attr, set())
            base = base & pool if pool is not None else base
            return {n for n in base if pred_holds(pred, self.kg.entities[n])}
        base = self.by_name.get(pred, set())
        return base & pool if pool is not None else set(base)

    def target_set(self, t: Target) -> frozenset[int]:
        if isinstance(t, Named):
            return frozenset((t.node,)) if t.node in self.kg.entities else frozenset()
        if t in self._memo:
            return self._memo[t]
        pool = self.by_type.get((t.kind, t.fine_type), set()) if t.fine_type else self.by_kind.get(t.kind, set())
        return self._remember(t, self.pred_set(t.pred, pool))

    def path_set(self, p: Path) -> frozenset[int]:
        if p in self._memo:
            return self._memo[p]
        cur: set[int] = set(self.target_set(p.end))
        for step in reversed(p.steps):
            rel = None if step.relation == MENTIONS else step.relation  # "links to" means any link
            nxt: set[int] = set()
            for s in cur:
                if step.direction == "out":
                    nxt |= self.kg.predecessors(s, rel)
                else:
                    nxt |= self.kg.successors(s, rel)
            cur = nxt
        return self._remember(p, cur)

    def extreme_set(self, c: Extreme) -> frozenset[int]:
        if c in self._memo:
            return self._memo[c]
        values = {n: attr_value(self.kg.entities[n], c.attr) for n in self.path_set(c.group)}
        known = {n: v for n, v in values.items() if v is not None}
        if not known:
            return self._remember(c, set())
        best = min(known.values()) if c.mode == "min" else max(known.values())
        return self._remember(c, {n for n, v in known.items() if v == best})

    def exact(self, c: Constraint) -> frozenset[int] | set[int] | None:
        """The set of entities satisfying c, where an index gives it directly; else None."""
        if isinstance(c, IsKind):
            return self.by_kind.get(c.kind, set())
        if isinstance(c, Path):
            return self.path_set(c)
        if isinstance(c, Extreme):
            return self.extreme_set(c)
        if isinstance(c, HasAttr) and not isinstance(c.pred, DateIn | NumberIn):
            return self.by_name.get(c.pred, set())
        return None

    def narrow(self, c: Constraint, pool: set[int] | frozenset[int]) -> set[int]:
        """The members of pool that satisfy c."""
        ex = self.exact(c)
        if ex is not None:
            return set(pool & ex) if len(pool) <= len(ex) else set(ex & pool)
        if isinstance(c, HasAttr):
            return self.pred_set(c.pred, pool)
        if isinstance(c, Not):
            return set(pool) - self.narrow(c.inner, pool)
        if isinstance(c, CountOf):
            counts: dict[int, int] = {}
            for a in c.among:
                for n in self.kg.neighbors(a.node):
                    counts[n] = counts.get(n, 0) + 1
            if c.k == 0:
                return {n for n in pool if n not in counts}
            return {n for n, k in counts.items() if k == c.k and n in pool}
        if isinstance(c, Compare):
            return {n for n in pool & self.by_attr.get(c.attr, set()) if self.holds(c, n)}
        raise TypeError(f"unknown constraint {c!r}")

    def holds(self, c: Constraint, n: int) -> bool:
        """Whether entity n satisfies c (one entity: for sets use narrow)."""
        e = self.kg.entities[n]
        if isinstance(c, IsKind):
            return e.kind == c.kind
        if isinstance(c, HasAttr):
            return pred_holds(c.pred, e)
        if isinstance(c, Path):
            return n in self.path_set(c)
        if isinstance(c, Not):
            return not self.holds(c.inner, n)
        if isinstance(c, CountOf):
            nbrs = self.kg.neighbors(n)
            return sum(a.node in nbrs for a in c.among) == c.k
        if isinstance(c, Compare):
            mine = attr_value(e, c.attr)
            other = self.kg.entities.get(c.other.node)
            theirs = attr_value(other, c.attr) if other is not None else None
            if mine is None or theirs is None:
                return False
            return mine < theirs if c.op == "<" else mine > theirs
        if isinstance(c, Extreme):
            return n in self.extreme_set(c)
        raise TypeError(f"unknown constraint {c!r}")

    def solve(self, constraints: Sequence[Constraint]) -> set[int]:
        """All entities satisfying every constraint; exact index sets first, smallest first."""
        exacts = [(c, self.exact(c)) for c in constraints]
        ordered = sorted(((c, s) for c, s in exacts if s is not None), key=lambda cs: len(cs[1]))
        pool: set[int] | frozenset[int] = ordered[0][1] if ordered else self.all
        for _, s in ordered[1:]:
            pool = pool & s
            if not pool:
                return set()
        for c, s in exacts:
            if s is None:
                pool = self.narrow(c, pool)
                if not pool:
                    return set()
        return set(pool)
