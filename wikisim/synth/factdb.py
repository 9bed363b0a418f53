"""The fact table: typed relations and attributes of every entity, in indexed SQLite tables.

Why SQLite and not Python objects: a full dump has millions of entities; holding its graph
in dicts of sets does not fit, and building it takes longer than the questions it serves.
Here facts live on disk, indexed by subject, by (relation, object) and by (attribute, value),
so the walker, the solver and the verifier ask only for what they touch, and the cost of a
question does not grow with the dump. Entities without a page of their own (the object of a
"born in" link to an article the dump lacks) are entities too: their kind is what their
relation implies. Reads go through small per-process caches.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from wikisim.corpus.page import Page, Redirect, normalize_title, title_to_url
from wikisim.errors import ConfigError
from wikisim.synth.facts import DOMAIN, RANGE, fits, page_facts
from wikisim.synth.kinds import ANSWER_KINDS, CONCEPT, ORG, PERSON, title_kind
from wikisim.synth.mentions import MentionFinder

# the table and what fills it: bumped when the same pages give other facts, so that a cached
# table (keyed by it) is never read stale. 2: an agent named after a descriptor ("by American
# author Irwin Shaw") is the later name; a law named without a page is a concept, not a person
SCHEMA_VERSION = "facts-2"
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE entity(id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, noun TEXT NOT NULL,
                    page INTEGER NOT NULL, hub INTEGER NOT NULL DEFAULT 0);
CREATE TABLE alias(alias TEXT PRIMARY KEY, title TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE rel(s INTEGER NOT NULL, r TEXT NOT NULL, o INTEGER NOT NULL, evidence TEXT NOT NULL,
                 url TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY(s, r, o)) WITHOUT ROWID;
CREATE TABLE attr(s INTEGER NOT NULL, a TEXT NOT NULL, v REAL NOT NULL, month INTEGER NOT NULL, unit TEXT NOT NULL,
                  evidence TEXT NOT NULL, url TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY(s, a)) WITHOUT ROWID;
CREATE TABLE raw(seq INTEGER PRIMARY KEY, page INTEGER NOT NULL, subj TEXT NOT NULL, r TEXT NOT NULL,
                 obj TEXT NOT NULL, need_page INTEGER NOT NULL, evidence TEXT NOT NULL, url TEXT NOT NULL,
                 source TEXT NOT NULL);
CREATE TABLE rawlink(page INTEGER NOT NULL, target TEXT NOT NULL);
CREATE TABLE adj(n INTEGER NOT NULL, m INTEGER NOT NULL, PRIMARY KEY(n, m)) WITHOUT ROWID;
CREATE TABLE start(i INTEGER PRIMARY KEY, n INTEGER NOT NULL);
"""
_INDEXES = """
CREATE INDEX rel_by_object ON rel(o, r, s);
CREATE INDEX attr_by_value ON attr(a, v);
"""
MAX_LINKS = 200  # body links (or lead mentions) per page kept as walk edges
MENTION_CHARS = 1500
CACHE_KB = (
    32_768  # SQLite's page cache per connection: the hot part of a large table stays in memory
)
HUB_MIN = 50  # an entity that is the object of more facts than this (or 0.5% of entities) is a hub


@dataclass(frozen=True)
class Ent:
    id: int
    title: str
    kind: str
    noun: str
    page: bool
    hub: bool

    @property
    def url(self) -> str:
        return title_to_url(self.title)

    @property
    def answerable(self) -> bool:
        return self.kind in ANSWER_KINDS and not self.hub


@dataclass(frozen=True)
class AttrVal:
    attr: str
    value: float  # a date's year, or a quantity
    month: int
    unit: str
    evidence: str
    url: str


@dataclass(frozen=True)
class RelRow:
    s: int
    r: str
    o: int
    evidence: str
    url: str
    source: str


class PageSource(Protocol):
    """What the build reads: a PageStore, or pages held in a list (see ListSource)."""

    def pages(self) -> Iterable[Page]: ...

    def redirects(self) -> Iterable[Redirect]: ...

    def titles(self) -> Iterable[tuple[int, str]]: ...


@dataclass(frozen=True)
class ListSource:
    page_list: tuple[Page, ...]
    redirect_list: tuple[Redirect, ...] = ()

    def pages(self) -> Iterable[Page]:
        return iter(self.page_list)

    def redirects(self) -> Iterable[Redirect]:
        return iter(self.redirect_list)

    def titles(self) -> Iterable[tuple[int, str]]:
        return ((p.id, p.title) for p in self.page_list)


def build_facts(source: PageSource, path: str | Path) -> FactDB:
    """Read every page's facts into a new SQLite file at `path` (replaced if it exists).

    Walk edges are typed relations plus co-occurrence: a page's first MAX_LINKS body links,
    or, on a page without link markup, the titles its lead names."""
    finder: MentionFinder | None = None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    db = sqlite3.connect(path)
    db.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=MEMORY;" + _SCHEMA
    )
    seq = 0
    max_page = 0
    for page in source.pages():
        body = list(dict.fromkeys(ln.target for ln in page.links if not ln.field))[:MAX_LINKS]
        if not page.links:
            if finder is None:
                finder = MentionFinder(normalize_title(t) for _, t in source.titles())
            body = finder.find(page.text[:MENTION_CHARS])[:MAX_LINKS]
        db.executemany(
            "INSERT INTO rawlink VALUES (?, ?)", ((page.id, normalize_title(t)) for t in body)
        )
        facts = page_facts(page)
        title = normalize_title(page.title)
        max_page = max(max_page, page.id)
        db.execute(
            "INSERT OR IGNORE INTO entity(id, title, kind, noun, page) VALUES (?, ?, ?, ?, 1)",
            (page.id, title, facts.kind, facts.noun[:60]),
        )
        for f in facts.rels:
            seq += 1
            db.execute(
                "INSERT INTO raw VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    seq,
                    page.id,
                    "\t".join(f.subject),
                    f.relation,
                    "\t".join(f.obj),
                    int(f.need_page),
                    f.evidence,
                    page.url,
                    f.source,
                ),
            )
        db.executemany(
            "INSERT OR IGNORE INTO attr VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (page.id, a.attr, a.value, a.month, a.unit, a.evidence, page.url, a.source)
                for a in facts.attrs
            ],
        )
    db.executemany(
        "INSERT OR IGNORE INTO alias VALUES (?, ?)",
        ((normalize_title(r.source), normalize_title(r.target)) for r in source.redirects()),
    )
    _resolve(db, max_page)
    db.executescript(_INDEXES)
    _mark_hubs(db)
    _adjacency(db)
    db.execute("DROP TABLE raw")
    db.execute("DROP TABLE rawlink")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", SCHEMA_VERSION)])
    db.commit()
    db.execute("VACUUM")
    db.close()
    return FactDB(path)


def _resolve(db: sqlite3.Connection, max_page: int) -> None:
    """Raw facts' titles -> entity ids (through redirects); new entities for titles without a page."""
    next_id = max_page + 1

    def lookup(title: str) -> int | None:
        row = db.execute("SELECT id FROM entity WHERE title = ?", (title,)).fetchone()
        if row is None:
            row = db.execute(
                "SELECT e.id FROM alias a JOIN entity e ON e.title = a.title WHERE a.alias = ?",
                (title,),
            ).fetchone()
        return row[0] if row else None

    def entity_for(cands: str, page: int, need_page: bool, kind: str) -> int | None:
        nonlocal next_id
        if not cands:
            return page
        titles = [normalize_title(t) for t in cands.split("\t")]
        for t in titles:
            found = lookup(t)
            if found is not None:
                return found
        if need_page:
            return None
        title = titles[0]
        if kind == PERSON and " " not in title:
            kind = CONCEPT  # "influenced by Buddhism": a one-word name is no evidence of a person
        elif _ORG_NAME.search(title):
            kind = ORG  # "produced by Hammer Film Productions": a company, whatever the relation expects
        elif _LAW_NAME.search(title):
            kind = CONCEPT  # "created by the Federal Judiciary Act": a law, not a person
        db.execute(
            "INSERT INTO entity(id, title, kind, noun, page) VALUES (?, ?, ?, '', 0)",
            (next_id, title, title_kind(title) or kind or CONCEPT),
        )
        next_id += 1
        return next_id - 1

    rows = db.execute(
        "SELECT page, subj, r, obj, need_page, evidence, url, source FROM raw ORDER BY seq"
    ).fetchall()
    for page, subj, r, obj, need_page, evidence, url, source in rows:
        s = entity_for(subj, page, bool(need_page), DOMAIN.get(r, ""))
        o = entity_for(obj, page, bool(need_page), RANGE.get(r, ""))
        if s is None or o is None or s == o:
            continue
        sk = db.execute("SELECT kind FROM entity WHERE id = ?", (s,)).fetchone()[0]
        ok = db.execute("SELECT kind FROM entity WHERE id = ?", (o,)).fetchone()[0]
        if not fits(r, sk, ok):
            continue  # "composed by" a city, a fact about a list or a year: a misreading
        db.execute(
            "INSERT OR IGNORE INTO rel VALUES (?, ?, ?, ?, ?, ?)", (s, r, o, evidence, url, source)
        )


_LAW_NAME = re.compile(
    r"\b(?:Act|Treaty|Accords?|Convention|Amendment|Charter|Statute|Ordinance)(?: of \d{4})?$"
)
_ORG_NAME = re.compile(
    r"\b(?:Productions|Pictures|Studios|Records|Entertainment|Films|Company|Corporation|Inc|Ltd|Press|Publishing|"
    r"Media|Network|Bank|University|College|School|Society|Association|Party|Club|Council|Institute|Foundation|"
    r"Agency|Academy|Orchestra)\b"
)


def _mark_hubs(db: sqlite3.Connection) -> None:
    n = db.execute("SELECT count(*) FROM entity").fetchone()[0]
    limit = max(HUB_MIN, n // 200)
    db.execute(
        "UPDATE entity SET hub = 1 WHERE id IN (SELECT o FROM rel GROUP BY o HAVING count(*) > ?)",
        (limit,),
    )
    db.execute(
        f"UPDATE entity SET hub = 1 WHERE kind NOT IN ({','.join('?' * len(ANSWER_KINDS))})",
        ANSWER_KINDS,
    )


def _adjacency(db: sqlite3.Connection) -> None:
    """The walk graph: typed relations between non-hub entities, both directions; and the walk starts."""
    db.execute("""INSERT OR IGNORE INTO adj SELECT r.s, r.o FROM rel r JOIN entity a ON a.id = r.s
                  JOIN entity b ON b.id = r.o WHERE a.hub = 0 AND b.hub = 0""")
    db.execute("""INSERT OR IGNORE INTO adj SELECT l.page, e.id FROM rawlink l
                  JOIN (SELECT target, coalesce((SELECT id FROM entity WHERE title = t.target),
                        (SELECT e.id FROM alias a JOIN entity e ON e.title = a.title WHERE a.alias = t.target)) AS id
                        FROM (SELECT DISTINCT target FROM rawlink) t) r ON r.target = l.target
                  JOIN entity e ON e.id = r.id JOIN entity p ON p.id = l.page
                  WHERE e.hub = 0 AND p.hub = 0 AND e.id != p.id""")
    db.execute("INSERT OR IGNORE INTO adj SELECT m, n FROM adj")
    db.execute("INSERT INTO start(n) SELECT DISTINCT n FROM adj ORDER BY n")


class FactDB:
    """Read access with per-process caches; pickles as its path, so workers reopen it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise ConfigError(
                f"no fact table at {self.path}; build it with build_facts (wikisim synth does)"
            )
        self._open()

    def _open(self) -> None:
        self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self.db.execute(f"PRAGMA cache_size = -{CACHE_KB}")
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path} is not a {SCHEMA_VERSION} fact table (found {row}); rebuild it"
            )
        self.entity = lru_cache(maxsize=200_000)(self._entity)
        self.out = lru_cache(maxsize=100_000)(self._out)
        self.inc = lru_cache(maxsize=100_000)(self._inc)
        self.attrs = lru_cache(maxsize=100_000)(self._attrs)
        self.adj = lru_cache(maxsize=100_000)(self._adj)
        self.n_starts = self.db.execute("SELECT count(*) FROM start").fetchone()[0]

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]
        self._open()

    def _entity(self, n: int) -> Ent:
        row = self.db.execute(
            "SELECT id, title, kind, noun, page, hub FROM entity WHERE id = ?", (n,)
        ).fetchone()
        if row is None:  # ids come from this table's own facts: a miss is a corrupt or foreign id
            raise KeyError(f"no entity {n} in the fact table {self.path}")
        return Ent(row[0], row[1], row[2], row[3], bool(row[4]), bool(row[5]))

    def _out(self, n: int) -> tuple[tuple[str, int, str], ...]:
        """(relation, object, object's kind) of n's facts: one query serves the walk and the kinds."""
        sql = "SELECT r.r, r.o, e.kind FROM rel r JOIN entity e ON e.id = r.o WHERE r.s = ? ORDER BY r.r, r.o"
        return tuple(self.db.execute(sql, (n,)).fetchall())

    def _inc(self, n: int) -> tuple[tuple[str, int, str], ...]:
        """(relation, subject, subject's kind) of the facts whose object is n."""
        sql = "SELECT r.r, r.s, e.kind FROM rel r JOIN entity e ON e.id = r.s WHERE r.o = ? ORDER BY r.r, r.s"
        return tuple(self.db.execute(sql, (n,)).fetchall())

    def _attrs(self, n: int) -> dict[str, AttrVal]:
        rows = self.db.execute(
            "SELECT a, v, month, unit, evidence, url FROM attr WHERE s = ? ORDER BY a", (n,)
        )
        return {r[0]: AttrVal(*r) for r in rows}

    def _adj(self, n: int) -> tuple[int, ...]:
        return tuple(
            m for (m,) in self.db.execute("SELECT m FROM adj WHERE n = ? ORDER BY m", (n,))
        )

    def start(self, i: int) -> int:
        return self.db.execute("SELECT n FROM start WHERE i = ?", (i + 1,)).fetchone()[0]

    def objects(self, s: int, r: str, kind: str = "") -> set[int]:
        """Objects of s's facts with relation r (of `kind`, if given)."""
        return {o for rr, o, k in self.out(s) if rr == r and (not kind or k == kind)}

    def subjects(self, r: str, o: int, kind: str = "") -> set[int]:
        """Subjects of the facts (r, o) (of `kind`, if given)."""
        return {s for rr, s, k in self.inc(o) if rr == r and (not kind or k == kind)}

    def relations(self, a: int, b: int) -> list[tuple[str, str]]:
        """Typed relations between a and b as (relation, "out" if a is the subject else "in")."""
        return sorted(
            [(r, "out") for r, o, _ in self.out(a) if o == b]
            + [(r, "in") for r, s, _ in self.inc(a) if s == b]
        )

    def fact(self, s: int, r: str, o: int) -> RelRow | None:
        row = self.db.execute(
            "SELECT s, r, o, evidence, url, source FROM rel WHERE s = ? AND r = ? AND o = ?",
            (s, r, o),
        ).fetchone()
        return RelRow(*row) if row else None

    def attr_range(self, attr: str, lo: float, hi: float) -> list[int]:
        return [
            s
            for (s,) in self.db.execute(
                "SELECT s FROM attr WHERE a = ? AND v BETWEEN ? AND ? ORDER BY s", (attr, lo, hi)
            )
        ]

    def attr_count(self, attr: str, lo: float, hi: float, cap: int) -> int:
        """How many entities have attr in [lo, hi], counting no further than cap."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM attr WHERE a = ? AND v BETWEEN ? AND ? LIMIT ?)"
        return self.db.execute(sql, (attr, lo, hi, cap)).fetchone()[0]

    def by_title(self, title: str) -> Ent | None:
        row = self.db.execute(
            "SELECT id FROM entity WHERE title = ?", (normalize_title(title),)
        ).fetchone()
        return self.entity(row[0]) if row else None

    def aliases(self, title: str) -> list[str]:
        return [
            a
            for (a,) in self.db.execute(
                "SELECT alias FROM alias WHERE title = ? ORDER BY alias", (title,)
            )
        ]

    def counts(self) -> dict[str, int]:
        one = self.db.execute
        return {
            "entities": one("SELECT count(*) FROM entity").fetchone()[0],
            "page_entities": one("SELECT count(*) FROM entity WHERE page = 1").fetchone()[0],
            "hubs": one("SELECT count(*) FROM entity WHERE hub = 1").fetchone()[0],
            "relations": one("SELECT count(*) FROM rel").fetchone()[0],
            "attributes": one("SELECT count(*) FROM attr").fetchone()[0],
            "walk_edges": one("SELECT count(*) FROM adj").fetchone()[0] // 2,
            "walk_nodes": self.n_starts,
        }

    def histogram(self, sql: str) -> dict[str, int]:
        return {str(k): v for k, v in self.db.execute(sql)}
