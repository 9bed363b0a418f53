"""PageStore: the parsed corpus in one SQLite file, looked up by id, title, URL or near-miss.

SQLite because it needs no server, is a single file that can be renamed into place
atomically by the build, and answers point lookups in microseconds. Links, categories,
infobox facts and citations get their own tables so that the graph and the scholar
tool can query them; the page's nested parts travel as one JSON column.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import threading
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from wikisim.corpus.page import (
    Citation,
    Infobox,
    Link,
    Page,
    Redirect,
    Section,
    normalize_title,
    url_to_title,
)
from wikisim.errors import CorpusError, IndexNotBuiltError

SCHEMA_VERSION = "1"
MAX_REDIRECT_HOPS = 8

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages(id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, lower TEXT NOT NULL,
                   url TEXT NOT NULL, description TEXT NOT NULL, text TEXT NOT NULL,
                   parts TEXT NOT NULL);
CREATE TABLE redirects(source TEXT PRIMARY KEY, lower TEXT NOT NULL, target TEXT NOT NULL);
CREATE TABLE links(page_id INTEGER NOT NULL, n INTEGER NOT NULL, target TEXT NOT NULL,
                   anchor TEXT NOT NULL, sentence TEXT NOT NULL, field TEXT NOT NULL,
                   PRIMARY KEY(page_id, n)) WITHOUT ROWID;
CREATE TABLE categories(page_id INTEGER NOT NULL, name TEXT NOT NULL);
CREATE TABLE infobox(page_id INTEGER NOT NULL, type TEXT NOT NULL, n INTEGER NOT NULL,
                     field TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE citations(page_id INTEGER NOT NULL, n INTEGER NOT NULL, title TEXT NOT NULL,
                       authors TEXT NOT NULL, year INTEGER, venue TEXT NOT NULL,
                       doi TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY(page_id, n)) WITHOUT ROWID;
"""
_INDEXES = """
CREATE INDEX pages_lower ON pages(lower);
CREATE INDEX pages_url ON pages(url);
CREATE INDEX redirects_lower ON redirects(lower);
CREATE INDEX redirects_target ON redirects(target);
CREATE INDEX links_target ON links(target);
CREATE INDEX categories_name ON categories(name);
CREATE INDEX infobox_page ON infobox(page_id);
"""
_TABLES = ("pages", "redirects", "links", "categories", "infobox", "citations")


def _parts(page: Page) -> str:
    """Sections, infobox, categories and citations as compact JSON (order kept)."""
    return json.dumps([
        [[s.title, s.level, s.text] for s in page.sections],
        [page.infobox.type, [list(f) for f in page.infobox.fields]] if page.infobox else None,
        list(page.categories),
        [[c.title, list(c.authors), c.year, c.venue, c.doi, c.url] for c in page.citations],
    ], ensure_ascii=False, separators=(",", ":"))


class PageStoreWriter:
    """Writes a new store file; it is complete (indexed, counted) only after `close()`."""

    def __init__(self, path: str | PathLike) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise CorpusError(f"{self.path}: already exists; write the store to a new path "
                              "(builds write to a temporary directory, then rename it)")
        self._db = sqlite3.connect(self.path)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        self._closed = False

    def __enter__(self) -> PageStoreWriter:
        return self

    def __exit__(self, exc_type, *_: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._db.close()
            self._closed = True

    def add_page(self, page: Page) -> None:
        if not isinstance(page, Page):
            raise CorpusError(f"add_page got {type(page).__name__}, expected a Page")
        db = self._db
        try:
            db.execute("INSERT INTO pages VALUES (?,?,?,?,?,?,?)",
                       (page.id, page.title, page.title.lower(), page.url, page.description,
                        page.text, _parts(page)))
        except sqlite3.IntegrityError as e:
            other = db.execute("SELECT id, title FROM pages WHERE id=? OR title=?",
                               (page.id, page.title)).fetchone()
            raise CorpusError(
                f"page {page.title!r} (id {page.id}) clashes with page {other[1]!r} (id {other[0]}) "
                "already in the store: the inputs repeat a page id or title; "
                "build from inputs that do not overlap") from e
        db.executemany("INSERT INTO links VALUES (?,?,?,?,?,?)",
                       [(page.id, n, x.target, x.anchor, x.sentence, x.field)
                        for n, x in enumerate(page.links)])
        db.executemany("INSERT INTO categories VALUES (?,?)",
                       [(page.id, c) for c in page.categories])
        if page.infobox is not None:
            db.executemany("INSERT INTO infobox VALUES (?,?,?,?,?)",
                           [(page.id, page.infobox.type, n, k, v)
                            for n, (k, v) in enumerate(page.infobox.fields)])
        db.executemany("INSERT INTO citations VALUES (?,?,?,?,?,?,?,?)",
                       [(page.id, n, c.title, json.dumps(list(c.authors), ensure_ascii=False),
                         c.year, c.venue, c.doi, c.url) for n, c in enumerate(page.citations)])

    def add_redirect(self, redirect: Redirect) -> None:
        """A redirect; a second one from the same title is ignored (the first wins)."""
        if not isinstance(redirect, Redirect):
            raise CorpusError(f"add_redirect got {type(redirect).__name__}, expected a Redirect")
        self._db.execute("INSERT OR IGNORE INTO redirects VALUES (?,?,?)",
                         (redirect.source, redirect.source.lower(), redirect.target))

    def add(self, item: Page | Redirect) -> None:
        if isinstance(item, Redirect):
            self.add_redirect(item)
        else:
            self.add_page(item)

    def close(self) -> None:
        if self._closed:
            return
        db = self._db
        db.executescript(_INDEXES)
        db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        db.commit()
        db.execute("VACUUM")
        db.close()
        self._closed = True


class PageStore:
    """Read-only lookups over a store written by `PageStoreWriter`; safe to share across threads."""

    def __init__(self, path: str | PathLike) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise IndexNotBuiltError(f"page store {self.path} does not exist; build it with "
                                     "`wikisim build INPUT --out DIR`")
        self._lock = threading.Lock()
        self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise IndexNotBuiltError(f"page store {self.path} is not a complete store ({e}); "
                                     "rebuild it") from e
        if row is None or row[0] != SCHEMA_VERSION:
            raise IndexNotBuiltError(f"page store {self.path} has schema {row and row[0]!r}, "
                                     f"expected {SCHEMA_VERSION!r}; rebuild it")
        self._titles: list[tuple[str, str]] | None = None

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    def close(self) -> None:
        self._db.close()

    def _all(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _one(self, sql: str, args: tuple = ()) -> tuple | None:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    def __len__(self) -> int:
        return self._one("SELECT COUNT(*) FROM pages")[0]  # type: ignore[index]

    def counts(self) -> dict[str, int]:
        out = {t: self._one(f"SELECT COUNT(*) FROM {t}")[0] for t in _TABLES}  # type: ignore[index]
        out["infoboxes"] = self._one("SELECT COUNT(DISTINCT page_id) FROM infobox")[0]  # type: ignore[index]
        out["infobox_fields"] = out.pop("infobox")
        return out

    # --- pages -------------------------------------------------------------------------
    def get(self, page_id: int) -> Page | None:
        row = self._one("SELECT id, title, url, description, text, parts FROM pages WHERE id=?",
                        (page_id,))
        return None if row is None else self._page(row)

    def _page(self, row: tuple) -> Page:
        page_id, title, url, description, text, parts = row
        sections, infobox, categories, citations = json.loads(parts)
        return Page(
            id=page_id, title=title, text=text, url=url, description=description,
            sections=tuple(Section(t, lv, x) for t, lv, x in sections),
            links=tuple(self.links_from(page_id)),
            infobox=Infobox(infobox[0], tuple((k, v) for k, v in infobox[1])) if infobox else None,
            categories=tuple(categories),
            citations=tuple(Citation(t, tuple(a), y, v, d, u) for t, a, y, v, d, u in citations),
        )

    def pages(self) -> Iterator[Page]:
        """Every page in id order, streamed."""
        last = -(2**63)
        while True:
            rows = self._all("SELECT id, title, url, description, text, parts FROM pages "
                             "WHERE id > ? ORDER BY id LIMIT 256", (last,))
            if not rows:
                return
            for row in rows:
                yield self._page(row)
            last = rows[-1][0]

    def titles(self) -> Iterator[tuple[int, str]]:
        yield from self._all("SELECT id, title FROM pages ORDER BY id")

    def redirects(self) -> Iterator[Redirect]:
        for source, target in self._all("SELECT source, target FROM redirects ORDER BY source"):
            yield Redirect(source, target)

    # --- lookups -----------------------------------------------------------------------
    def resolve_title(self, title: str) -> str | None:
        """The title of the page `title` names: exact, then redirects, then any letter case."""
        key = normalize_title(title)
        if not key:
            return None
        for _ in range(MAX_REDIRECT_HOPS):
            if self._one("SELECT 1 FROM pages WHERE title=?", (key,)):
                return key
            row = self._one("SELECT target FROM redirects WHERE source=?", (key,))
            if row is None:
                break
            key = row[0]
        row = self._one("SELECT title FROM pages WHERE lower=? ORDER BY id LIMIT 1", (key.lower(),))
        if row:
            return row[0]
        row = self._one("SELECT target FROM redirects WHERE lower=? ORDER BY source LIMIT 1",
                        (key.lower(),))
        if row and self._one("SELECT 1 FROM pages WHERE title=?", (row[0],)):
            return row[0]
        return None

    def by_title(self, title: str) -> Page | None:
        resolved = self.resolve_title(title)
        if resolved is None:
            return None
        row = self._one("SELECT id, title, url, description, text, parts FROM pages WHERE title=?",
                        (resolved,))
        return self._page(row) if row else None

    def resolve(self, title_or_url: str) -> Page | None:
        """A page from a title, a Wikipedia URL (`/wiki/Title` or `?curid=ID`), or None."""
        s = title_or_url.strip()
        if s.startswith(("http://", "https://")):
            parts = urlsplit(s)
            curid = parse_qs(parts.query).get("curid")
            if curid and curid[0].isdigit() and parts.netloc.endswith("wikipedia.org"):
                return self.get(int(curid[0]))
            title = url_to_title(s)
            return self.by_title(title) if title else None
        return self.by_title(s)

    def aliases(self, title: str) -> list[str]:
        """Titles that redirect to the page `title` names (sorted)."""
        resolved = self.resolve_title(title)
        if resolved is None:
            return []
        return [r[0] for r in self._all("SELECT source FROM redirects WHERE target=? "
                                        "ORDER BY source", (resolved,))]

    def links_from(self, page_id: int) -> list[Link]:
        return [Link(*r) for r in self._all("SELECT target, anchor, sentence, field FROM links "
                                            "WHERE page_id=? ORDER BY n", (page_id,))]

    def links_to(self, title: str) -> list[tuple[int, Link]]:
        """(source page id, link) for every link to the page, or to one of its redirects."""
        resolved = self.resolve_title(title) or normalize_title(title)
        names = [resolved, *self.aliases(resolved)]
        marks = ",".join("?" * len(names))
        rows = self._all(f"SELECT page_id, target, anchor, sentence, field FROM links "
                         f"WHERE target IN ({marks}) ORDER BY page_id, n", tuple(names))
        return [(r[0], Link(*r[1:])) for r in rows]

    def citations(self) -> Iterator[tuple[int, Citation]]:
        for pid, title, authors, year, venue, doi, url in self._all(
                "SELECT page_id, title, authors, year, venue, doi, url FROM citations "
                "ORDER BY page_id, n"):
            yield pid, Citation(title, tuple(json.loads(authors)), year, venue, doi, url)

    def closest_titles(self, text: str, n: int = 5) -> list[str]:
        """Page titles nearest to `text` in spelling (redirects count as their target)."""
        if self._titles is None:
            names = [(t.lower(), t) for _, t in self.titles()]
            names += [(s.lower(), t) for s, t in self._all(
                "SELECT r.source, r.target FROM redirects r JOIN pages p ON p.title = r.target")]
            self._titles = sorted(names)
        keys = [k for k, _ in self._titles]
        target_of = dict(reversed(self._titles))
        out: list[str] = []
        for key in difflib.get_close_matches(normalize_title(text).lower(), keys, n=4 * n,
                                             cutoff=0.5):
            title = target_of[key]
            if title not in out:
                out.append(title)
        return out[:n]
