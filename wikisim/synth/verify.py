"""Independent re-verification of a written question record, as one SQL query.

Why a second verifier: the solver works on constraint objects with Python set algebra and
caches; this one reads only the JSON record, compiles its constraints into a single SQL
query over the fact table and lets SQLite find every satisfying entity. It shares no code
with the solver beyond the table's schema. A question passes only if exactly its answer
satisfies every constraint, its answer's name is not in the question, and every evidence
fact it cites is in the table.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class Reverdict:
    id: str
    ok: bool
    reason: str  # "" when ok
    satisfying: tuple[int, ...]


def _display(title: str) -> str:
    return _PAREN.sub("", title).strip() or title


def _initials(title: str) -> str:
    return " ".join(w[0].upper() + "." for w in _display(title).split() if w[:1].isalnum())


class Reverifier:
    def __init__(self, path: str | Path) -> None:
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.db.create_function(
            "display_first", 1, lambda t: _display(t)[:1].upper(), deterministic=True
        )
        self.db.create_function("initials", 1, _initials, deterministic=True)

    def _pred(self, p: dict[str, Any], col: str, args: list[Any]) -> str:
        t = p["type"]
        if t in ("DateIn", "NumberIn"):
            args += [p["attr"], p["lo"], p["hi"]]
            months = ""
            if t == "DateIn" and p["months"]:
                months = f" AND month IN ({','.join('?' * len(p['months']))})"
                args += list(p["months"])
            return f"EXISTS (SELECT 1 FROM attr WHERE s = {col} AND a = ? AND v BETWEEN ? AND ?{months})"
        if t == "NameStarts":
            args.append(p["letter"])
            return f"(SELECT display_first(title) FROM entity WHERE id = {col}) = ?"
        if t == "NameInitials":
            args.append(p["initials"])
            return f"(SELECT initials(title) FROM entity WHERE id = {col}) = ?"
        raise ValueError(f"unknown predicate {t!r}")

    def _end(self, end: dict[str, Any], args: list[Any]) -> str:
        if end["type"] == "Named":
            args.append(end["node"])
            return "SELECT ?"
        args.append(end["kind"])
        inner = self._pred(end["pred"], "e.id", args)
        return f"SELECT e.id FROM entity e WHERE e.kind = ? AND {inner}"

    def _path(self, p: dict[str, Any], args: list[Any]) -> str:
        return self._chain(p["steps"], p["end"], 0, args)

    def _chain(
        self, steps: list[dict[str, Any]], end: dict[str, Any], i: int, args: list[Any]
    ) -> str:
        """SQL for the ids at position i of a path that reach its end (placeholders in text order)."""
        if i == len(steps):
            return self._end(end, args)
        open_ = close = ""
        if i > 0 and steps[i - 1]["kind"]:
            args.append(steps[i - 1]["kind"])
            open_, close = "SELECT id FROM entity WHERE kind = ? AND id IN (", ")"
        pick, match = ("s", "o") if steps[i]["direction"] == "out" else ("o", "s")
        args.append(steps[i]["relation"])
        inner = self._chain(steps, end, i + 1, args)
        return f"{open_}SELECT {pick} FROM rel WHERE r = ? AND {match} IN ({inner}){close}"

    def _where(self, c: dict[str, Any], args: list[Any]) -> str:
        t = c["type"]
        if t == "IsKind":
            args.append(c["kind"])
            return "x.kind = ?"
        if t == "HasAttr":
            return self._pred(c["pred"], "x.id", args)
        if t == "Path":
            return f"x.id IN ({self._path(c, args)})"
        if t == "Not":
            return f"x.id NOT IN ({self._path(c['inner'], args)})"
        if t == "CountOf":
            terms = []
            for a in c["among"]:
                one = {"type": "Path", "steps": [c["step"]], "end": a}
                terms.append(f"(x.id IN ({self._path(one, args)}))")
            args.append(c["k"])
            return f"({' + '.join(terms)}) = ?"
        if t == "Compare":
            op = "<" if c["op"] == "<" else ">"
            args += [c["attr"], c["other"]["node"], c["attr"]]
            return (
                f"(SELECT v FROM attr WHERE s = x.id AND a = ?) {op} "
                f"(SELECT v FROM attr WHERE s = ? AND a = ?)"
            )
        if t == "Extreme":
            agg = "min" if c["mode"] == "min" else "max"
            group_args: list[Any] = []
            group = self._path(c["group"], group_args)
            args += [*group_args, c["attr"], c["attr"], *group_args]
            return (
                f"x.id IN ({group}) AND (SELECT v FROM attr WHERE s = x.id AND a = ?) = "
                f"(SELECT {agg}(v) FROM attr WHERE a = ? AND s IN ({group}))"
            )
        raise ValueError(f"unknown constraint {t!r}")

    def satisfying(self, constraints: list[dict[str, Any]]) -> tuple[int, ...]:
        args: list[Any] = []
        order = {
            "Path": 0,
            "Extreme": 1,
            "CountOf": 2,
            "IsKind": 3,
            "HasAttr": 4,
            "Compare": 5,
            "Not": 6,
        }
        wheres = [self._where(c, args) for c in sorted(constraints, key=lambda c: order[c["type"]])]
        sql = f"SELECT x.id FROM entity x WHERE {' AND '.join(wheres)} ORDER BY x.id LIMIT 11"
        return tuple(r[0] for r in self.db.execute(sql, args))

    def _cited(self, f: dict[str, Any]) -> bool:
        if "relation" in f:
            row = self.db.execute(
                "SELECT 1 FROM rel WHERE s = ? AND r = ? AND o = ? AND url = ?",
                (f["subject_id"], f["relation"], f["object_id"], f["url"]),
            ).fetchone()
        else:
            row = self.db.execute(
                "SELECT 1 FROM attr WHERE s = ? AND a = ? AND url = ?",
                (f["subject_id"], f["attribute"], f["url"]),
            ).fetchone()
        return row is not None

    def check(self, record: dict[str, Any]) -> Reverdict:
        qid, x = record["id"], record["answer_node"]
        row = self.db.execute("SELECT title FROM entity WHERE id = ?", (x,)).fetchone()
        if row is None or row[0] != record["answer"]:
            return Reverdict(qid, False, "answer_not_in_table", ())
        if re.search(rf"\b{re.escape(_display(row[0]))}\b", record["question"], re.IGNORECASE):
            return Reverdict(qid, False, "answer_named", ())
        if not all(self._cited(f) for f in record["evidence_facts"]):
            return Reverdict(qid, False, "evidence_not_in_table", ())
        sat = self.satisfying(record["constraints"])
        if sat != (x,):
            return Reverdict(qid, False, "not_unique" if len(sat) > 1 else "answer_fails", sat[:10])
        return Reverdict(qid, True, "", sat)
