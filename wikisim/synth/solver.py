"""The solver: every entity of the whole fact table that satisfies a conjunction of constraints.

Why generate-then-check: one constraint with a small exact set (a fact about a named anchor,
a count over named anchors, a superlative over a group) is computed from the indexes by
walking its path backwards; every other constraint is then checked on those few candidates
by walking forwards from each. Nothing scans all entities, so a check costs the same on a
dump of a hundred pages or of millions.
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
    Not,
    NumberIn,
    Path,
    Pred,
    Step,
    Target,
)
from wikisim.synth.factdb import FactDB
from wikisim.synth.names import display_name, initials

_MEMO_LIMIT = 50_000


def pred_holds(db: FactDB, pred: Pred, n: int) -> bool:
    if isinstance(pred, DateIn | NumberIn):
        a = db.attrs(n).get(pred.attr)
        if a is None or not pred.lo <= a.value <= pred.hi:
            return False
        return not isinstance(pred, DateIn) or not pred.months or a.month in pred.months
    e = db.entity(n)
    if isinstance(pred, NameInitials):
        return initials(e.title) == pred.initials
    if isinstance(pred, NameStarts):
        return display_name(e.title)[:1].upper() == pred.letter
    raise TypeError(f"unknown predicate {pred!r}")


def attr_value(db: FactDB, n: int, attr: str) -> float | None:
    a = db.attrs(n).get(attr)
    return a.value if a is not None else None


class Solver:
    def __init__(self, db: FactDB) -> None:
        self.db = db
        self._memo: dict[object, frozenset[int]] = {}

    def _remember(self, key: object, value: set[int]) -> frozenset[int]:
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        out = self._memo[key] = frozenset(value)
        return out

    def _kind_ok(self, n: int, kind: str) -> bool:
        return not kind or self.db.entity(n).kind == kind

    def target_set(self, t: Target) -> frozenset[int]:
        if isinstance(t, Named):
            return frozenset((t.node,))
        if t in self._memo:
            return self._memo[t]
        found = {
            n
            for n in self.db.attr_range(t.pred.attr, t.pred.lo, t.pred.hi)
            if self._kind_ok(n, t.kind) and pred_holds(self.db, t.pred, n)
        }
        return self._remember(t, found)

    def _back(self, frontier: set[int] | frozenset[int], step: Step, kind: str = "") -> set[int]:
        """Entities (of `kind`, if given) from which `step` reaches a member of frontier."""
        out: set[int] = set()
        for f in frontier:
            if step.direction == "out":
                out |= self.db.subjects(step.relation, f, kind)
            else:
                out |= self.db.objects(f, step.relation, kind)
        return out

    def _forward(self, n: int, step: Step) -> set[int]:
        if step.direction == "out":
            return self.db.objects(n, step.relation, step.kind)
        return self.db.subjects(step.relation, n, step.kind)

    def path_set(self, p: Path) -> frozenset[int]:
        """Every entity that reaches p's end through p's steps (walked backwards from the end)."""
        if p in self._memo:
            return self._memo[p]
        cur: set[int] = set(self.target_set(p.end))
        for i in range(len(p.steps) - 1, -1, -1):
            cur = self._back(cur, p.steps[i], p.steps[i - 1].kind if i > 0 else "")
        return self._remember(p, cur)

    def path_holds(self, p: Path, n: int) -> bool:
        cur = {n}
        for step in p.steps:
            cur = {m for c in cur for m in self._forward(c, step)}
            if not cur:
                return False
        if isinstance(p.end, Named):
            return p.end.node in cur
        return any(self._kind_ok(m, p.end.kind) and pred_holds(self.db, p.end.pred, m) for m in cur)

    def count_set(self, c: CountOf) -> dict[int, int]:
        """Entity -> how many of c.among it is related to by c.step."""
        counts: dict[int, int] = {}
        for a in c.among:
            for n in self._back({a.node}, c.step):
                counts[n] = counts.get(n, 0) + 1
        return counts

    def extreme_set(self, c: Extreme) -> frozenset[int]:
        if c in self._memo:
            return self._memo[c]
        known = {
            n: v
            for n in self.path_set(c.group)
            if (v := attr_value(self.db, n, c.attr)) is not None
        }
        if not known:
            return self._remember(c, set())
        best = min(known.values()) if c.mode == "min" else max(known.values())
        return self._remember(c, {n for n, v in known.items() if v == best})

    def generator(self, c: Constraint) -> frozenset[int] | set[int] | None:
        """The exact set of c where an index gives it cheaply; None where only a check will do."""
        if isinstance(c, Path) and isinstance(c.end, Named):
            return self.path_set(c)
        if isinstance(c, Extreme):
            return self.extreme_set(c)
        if isinstance(c, CountOf) and c.k > 0:
            return {n for n, k in self.count_set(c).items() if k == c.k}
        return None

    def holds(self, c: Constraint, n: int) -> bool:
        db = self.db
        if isinstance(c, IsKind):
            return db.entity(n).kind == c.kind
        if isinstance(c, HasAttr):
            return pred_holds(db, c.pred, n)
        if isinstance(c, Path):
            return self.path_holds(c, n)
        if isinstance(c, Not):
            return not self.path_holds(c.inner, n)
        if isinstance(c, CountOf):
            return sum(self.path_holds(Path((c.step,), a), n) for a in c.among) == c.k
        if isinstance(c, Compare):
            mine, theirs = attr_value(db, n, c.attr), attr_value(db, c.other.node, c.attr)
            if mine is None or theirs is None:
                return False
            return mine < theirs if c.op == "<" else mine > theirs
        if isinstance(c, Extreme):
            return n in self.extreme_set(c)
        raise TypeError(f"unknown constraint {c!r}")

    def candidates(self, constraints: Sequence[Constraint]) -> set[int]:
        """A superset of the answer set from the smallest cheap generator (or a described path)."""
        sets = [s for c in constraints if (s := self.generator(c)) is not None]
        if not sets:
            described = [self.path_set(c) for c in constraints if isinstance(c, Path)]
            attrs = [
                set(self.db.attr_range(c.pred.attr, c.pred.lo, c.pred.hi))
                for c in constraints
                if isinstance(c, HasAttr) and isinstance(c.pred, DateIn | NumberIn)
            ]
            sets = [*described, *attrs]
        if not sets:
            raise ValueError(
                f"no constraint of {constraints!r} narrows the entities: add a fact or an attribute"
            )
        return set(min(sets, key=len))

    def solve(self, constraints: Sequence[Constraint]) -> set[int]:
        """All entities satisfying every constraint."""
        return {
            n for n in self.candidates(constraints) if all(self.holds(c, n) for c in constraints)
        }

    def narrow(self, c: Constraint, pool: set[int]) -> set[int]:
        return {n for n in pool if self.holds(c, n)}
