"""The constraint language questions are made of: frozen records that serialise to JSON.

Why a language and not just text: the solver, the independent re-verifier and the realiser
all read the same records, so "the question says X" and "X was checked" cannot drift apart.
Every constraint restricts the answer variable and is a fact about the world (a typed
relation, an attribute, a name); anchors are other entities, named or described.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from wikisim.errors import TaskError

Direction = Literal[
    "out", "in"
]  # out: the current entity is the fact's subject, the next its object


@dataclass(frozen=True)
class DateIn:
    """A fuzzed date: the year lies in [lo, hi]; if months is set, the month is one of them."""

    attr: str
    lo: int
    hi: int
    label: str  # "the late 1880s", "a spring in the 1950s"
    months: tuple[int, ...] = ()


@dataclass(frozen=True)
class NumberIn:
    attr: str
    lo: float
    hi: float
    unit: str = ""


@dataclass(frozen=True)
class NameInitials:
    initials: str  # "J. S. B."


@dataclass(frozen=True)
class NameStarts:
    letter: str


Pred = DateIn | NumberIn | NameInitials | NameStarts


@dataclass(frozen=True)
class Named:
    node: int
    name: str


@dataclass(frozen=True)
class Described:
    """Entity obfuscation: every entity of this kind that satisfies pred ("a city with ...")."""

    kind: str
    noun: str  # how the text names the kind ("city"); the solver checks kind and pred
    pred: DateIn | NumberIn


Target = Named | Described


@dataclass(frozen=True)
class Step:
    """One typed fact between neighbours on a path; `kind` is the kind of the entity it reaches."""

    relation: str
    direction: Direction
    kind: str = ""


@dataclass(frozen=True)
class IsKind:
    kind: str


@dataclass(frozen=True)
class HasAttr:
    pred: Pred


@dataclass(frozen=True)
class Path:
    """answer -steps[0]- v1 -steps[1]- ... - end: one step is a fact, two or three a chain."""

    steps: tuple[Step, ...]
    end: Target


@dataclass(frozen=True)
class Not:
    inner: Path


@dataclass(frozen=True)
class CountOf:
    """Exactly k of `among` are related to the answer by `step` (answer -step- a)."""

    among: tuple[Named, ...]
    k: int
    step: Step


@dataclass(frozen=True)
class Compare:
    attr: str
    op: Literal["<", ">"]
    other: Named
    value_kind: Literal["date", "number"] = "number"


@dataclass(frozen=True)
class Extreme:
    """The answer is the min/max of attr among the entities that satisfy `group`."""

    attr: str
    mode: Literal["min", "max"]
    group: Path
    value_kind: Literal["date", "number"] = "number"


Constraint = IsKind | HasAttr | Path | Not | CountOf | Compare | Extreme

_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (
        DateIn,
        NumberIn,
        NameInitials,
        NameStarts,
        Named,
        Described,
        Step,
        IsKind,
        HasAttr,
        Path,
        Not,
        CountOf,
        Compare,
        Extreme,
    )
}


def to_dict(obj: Any) -> Any:
    """Tagged JSON form: {"type": "Path", ...}; tuples become lists."""
    if type(obj).__name__ in _TYPES:
        out: dict[str, Any] = {"type": type(obj).__name__}
        for name in obj.__dataclass_fields__:
            out[name] = to_dict(getattr(obj, name))
        return out
    if isinstance(obj, tuple | list):
        return [to_dict(x) for x in obj]
    return obj


def from_dict(data: Any) -> Any:
    """Inverse of to_dict; raises TaskError naming an unknown type."""
    if isinstance(data, list):
        return tuple(from_dict(x) for x in data)
    if isinstance(data, dict):
        name = data.get("type")
        if name not in _TYPES:
            raise TaskError(
                f"unknown constraint type {name!r} in {data!r}; known: {sorted(_TYPES)}"
            )
        return _TYPES[name](**{k: from_dict(v) for k, v in data.items() if k != "type"})
    return data
