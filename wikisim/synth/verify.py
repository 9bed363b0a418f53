"""Independent re-verification of a written question record, by brute force.

Why a second verifier: the solver in `solver.py` works on constraint objects with indexes and
memo tables; this one reads only the JSON record, tests every entity of a networkx
MultiDiGraph one by one, and shares no code with the solver beyond the graph's data. A question passes only
if exactly its answer satisfies every constraint, the answer page exists, its name is not in
the question, and every evidence URL is a page of the graph.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from wikisim.synth.graph import MENTIONS, KnowledgeGraph

_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class Reverdict:
    id: str
    ok: bool
    reason: str  # "" when ok
    satisfying: tuple[int, ...]


def graph_view(kg: KnowledgeGraph) -> nx.MultiDiGraph:
    """One directed edge per (src, dst, relation); nodes carry the entity record."""
    g = nx.MultiDiGraph()
    for n, e in kg.entities.items():
        g.add_node(n, entity=e)
    for (u, v), rels in kg.edges.items():
        for rel in rels:
            g.add_edge(u, v, key=rel)
    return g


class Reverifier:
    def __init__(self, kg: KnowledgeGraph) -> None:
        self.kg = kg
        self.g = graph_view(kg)
        self.urls = {e.url for e in kg.entities.values()}

    def _name(self, n: int) -> str:
        t = self.kg.entities[n].title
        return _PAREN.sub("", t).strip() or t

    def _value(self, n: int, attr: str) -> float | None:
        for a in self.kg.entities[n].attributes:
            if a.name == attr:
                if a.date is not None:
                    return float(a.date.year)
                if a.quantity is not None:
                    return a.quantity.value
        return None

    def _pred(self, p: dict[str, Any], n: int) -> bool:
        e = self.kg.entities[n]
        words = self._name(n).split()
        t = p["type"]
        if t == "DateIn":
            a = next((a for a in e.attributes if a.name == p["attr"] and a.date is not None), None)
            return a is not None and p["lo"] <= a.date.year <= p["hi"] and (not p["months"] or a.date.month in p["months"])
        if t == "NumberIn":
            a = next((a for a in e.attributes if a.name == p["attr"] and a.quantity is not None), None)
            return a is not None and p["lo"] <= a.quantity.value <= p["hi"]
        if t == "NameInitials":
            return " ".join(w[0].upper() + "." for w in words if w[:1].isalnum()) == p["initials"]
        if t == "NameWords":
            return len(words) == p["n"]
        if t == "NameStarts":
            return bool(words) and words[0][:1].upper() == p["letter"]
        raise ValueError(f"unknown predicate {t!r}")

    def _is_target(self, t: dict[str, Any], n: int) -> bool:
        if t["type"] == "Named":
            return n == t["node"]
        e = self.kg.entities[n]
        return e.kind == t["kind"] and (not t["fine_type"] or e.fine_type == t["fine_type"]) and self._pred(t["pred"], n)

    def _back(self, n: int, step: dict[str, Any]) -> Iterable[int]:
        """The entities from which `step` leads to n."""
        edges = self.g.in_edges(n, keys=True) if step["direction"] == "out" else self.g.out_edges(n, keys=True)
        for u, v, rel in edges:
            if step["relation"] == MENTIONS or rel == step["relation"]:
                yield u if step["direction"] == "out" else v

    def _path_set(self, p: dict[str, Any], cache: dict[int, set[int]]) -> set[int]:
        """Entities that reach p's end through its steps, found walking backwards from the end."""
        key = id(p)
        if key not in cache:
            end = p["end"]
            frontier = {end["node"]} if end["type"] == "Named" else {m for m in self.g.nodes if self._is_target(end, m)}
            for step in reversed(p["steps"]):
                frontier = {m for f in frontier for m in self._back(f, step)}
            cache[key] = frontier
        return cache[key]

    def _holds(self, c: dict[str, Any], n: int, groups: dict[int, set[int]]) -> bool:
        t = c["type"]
        if t == "IsKind":
            return self.kg.entities[n].kind == c["kind"]
        if t == "HasAttr":
            return self._pred(c["pred"], n)
        if t == "Path":
            return n in self._path_set(c, groups)
        if t == "Not":
            return not self._holds(c["inner"], n, groups)
        if t == "CountOf":
            nbrs = set(self.g.successors(n)) | set(self.g.predecessors(n))
            return sum(a["node"] in nbrs for a in c["among"]) == c["k"]
        if t == "Compare":
            mine, theirs = self._value(n, c["attr"]), self._value(c["other"]["node"], c["attr"])
            return mine is not None and theirs is not None and (mine < theirs if c["op"] == "<" else mine > theirs)
        if t == "Extreme":
            values = {m: v for m in self._path_set(c["group"], groups) if (v := self._value(m, c["attr"])) is not None}
            if n not in values:
                return False
            best = min(values.values()) if c["mode"] == "min" else max(values.values())
            return values[n] == best
        raise ValueError(f"unknown constraint {t!r}")

    def check(self, record: dict[str, Any]) -> Reverdict:
        qid, x = record["id"], record["answer_node"]
        if x not in self.kg.entities or self.kg.entities[x].title != record["answer"]:
            return Reverdict(qid, False, "answer_not_in_corpus", ())
        if re.search(rf"\b{re.escape(self._name(x))}\b", record["question"], re.IGNORECASE):
            return Reverdict(qid, False, "answer_named", ())
        if not all(u in self.urls for u in record["evidence"]):
            return Reverdict(qid, False, "evidence_url_unknown", ())
        order = {"IsKind": 0, "HasAttr": 1, "Compare": 2, "CountOf": 3, "Path": 4, "Not": 5, "Extreme": 6}
        cons = sorted(record["constraints"], key=lambda c: order[c["type"]])
        groups: dict[int, set[int]] = {}
        sat = tuple(n for n in sorted(self.g.nodes) if all(self._holds(c, n, groups) for c in cons))
        if sat != (x,):
            return Reverdict(qid, False, "not_unique" if len(sat) > 1 else "answer_fails", sat[:10])
        return Reverdict(qid, True, "", sat)
