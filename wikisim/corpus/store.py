"""PageStore: the parsed corpus in one SQLite file, looked up by id, title, URL or near-miss.

SQLite because it needs no server, is a single file that can be renamed into place
atomically by the build, and answers point lookups in microseconds. A page's text,
sections and links travel as one zstd-compressed record (the text once: see `_body`);
what is looked up across pages has a compact table keyed for the lookup: link targets
(what links here), category names, infobox facts (by field and value) and citations.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from os import PathLike
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from wikisim.corpus.blob import pack, unpack, unpack_first
from wikisim.corpus.page import (
    Citation,
    Infobox,
    Link,
    Page,
    Redirect,
    Section,
    normalize_title,
    title_to_url,
    url_to_title,
)
from wikisim.errors import CorpusError, IndexNotBuiltError

SCHEMA_VERSION = "2"
MAX_REDIRECT_HOPS = 8
NAMES_PER_STATEMENT = 500  # pages_named's names bound in one statement (SQLite allows 32766)

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages(id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, lower TEXT NOT NULL,
                   body BLOB NOT NULL);
CREATE TABLE redirects(source TEXT PRIMARY KEY, lower TEXT NOT NULL, target TEXT NOT NULL);
CREATE TABLE links(target TEXT NOT NULL, page_id INTEGER NOT NULL,
                   PRIMARY KEY(target, page_id)) WITHOUT ROWID;
CREATE TABLE categories(name TEXT NOT NULL, page_id INTEGER NOT NULL,
                        PRIMARY KEY(name, page_id)) WITHOUT ROWID;
CREATE TABLE facts(page_id INTEGER NOT NULL, n INTEGER NOT NULL, field TEXT NOT NULL,
                   value TEXT NOT NULL, PRIMARY KEY(page_id, n)) WITHOUT ROWID;
CREATE TABLE citations(page_id INTEGER PRIMARY KEY, body BLOB NOT NULL);
"""
_INDEXES = """
CREATE INDEX pages_lower ON pages(lower);
CREATE INDEX redirects_lower ON redirects(lower);
CREATE INDEX redirects_target ON redirects(target);
CREATE INDEX facts_field ON facts(field, value);
"""
_COUNTS = ("pages", "redirects", "links", "categories", "infoboxes", "infobox_fields", "citations")


def _body(page: Page) -> bytes:
    """Everything of a page but its infobox fields and citations (in their tables), compressed.

    The text is held once: a section is its heading and level plus where its text sits in
    the page text (the text itself only when it is not there). Link sentences repeat the
    text; zstd stores a repeat as a back-reference, so they cost a few bytes each.
    """
    sections, at = [], 0
    for s in page.sections:
        start = page.text.find(s.text, at) if s.text else -1
        if start >= 0:
            at = start + len(s.text)
            sections.append([s.title, s.level, start, at])
        else:
            sections.append([s.title, s.level, s.text])
    url = None if page.url == title_to_url(page.title) else page.url
    return pack(
        [
            page.text,
            url,
            page.description,
            sections,
            page.infobox.type if page.infobox else None,
            list(page.categories),
            [[x.target, x.anchor, x.sentence, x.field] for x in page.links],
        ]
    )


class PageStoreWriter:
    """Writes a new store file; it is complete (indexed, counted) only after `close()`."""

    def __init__(self, path: str | PathLike) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise CorpusError(
                f"{self.path}: already exists; write the store to a new path "
                "(builds write to a temporary directory, then rename it)"
            )
        self._db = sqlite3.connect(self.path)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        self._counts = dict.fromkeys(_COUNTS, 0)
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
            db.execute(
                "INSERT INTO pages VALUES (?,?,?,?)",
                (page.id, page.title, page.title.lower(), _body(page)),
            )
        except sqlite3.IntegrityError as e:
            other = db.execute(
                "SELECT id, title FROM pages WHERE id=? OR title=?", (page.id, page.title)
            ).fetchone()
            raise CorpusError(
                f"page {page.title!r} (id {page.id}) clashes with page {other[1]!r} (id {other[0]}) "
                "already in the store: the inputs repeat a page id or title; "
                "build from inputs that do not overlap"
            ) from e
        db.executemany(
            "INSERT INTO links VALUES (?,?)",
            [(t, page.id) for t in dict.fromkeys(x.target for x in page.links)],
        )
        db.executemany(
            "INSERT INTO categories VALUES (?,?)",
            [(c, page.id) for c in dict.fromkeys(page.categories)],
        )
        if page.infobox is not None:
            db.executemany(
                "INSERT INTO facts VALUES (?,?,?,?)",
                [(page.id, n, k, v) for n, (k, v) in enumerate(page.infobox.fields)],
            )
        if page.citations:
            db.execute(
                "INSERT INTO citations VALUES (?,?)",
                (
                    page.id,
                    pack(
                        [
                            [c.title, list(c.authors), c.year, c.venue, c.doi, c.url]
                            for c in page.citations
                        ]
                    ),
                ),
            )
        c = self._counts
        c["pages"] += 1
        c["links"] += len(page.links)
        c["categories"] += len(page.categories)
        c["infoboxes"] += page.infobox is not None
        c["infobox_fields"] += len(page.infobox.fields) if page.infobox else 0
        c["citations"] += len(page.citations)

    def add_redirect(self, redirect: Redirect) -> None:
        """A redirect; a second one from the same title is ignored (the first wins)."""
        if not isinstance(redirect, Redirect):
            raise CorpusError(f"add_redirect got {type(redirect).__name__}, expected a Redirect")
        cur = self._db.execute(
            "INSERT OR IGNORE INTO redirects VALUES (?,?,?)",
            (redirect.source, redirect.source.lower(), redirect.target),
        )
        self._counts["redirects"] += cur.rowcount

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
        db.executemany(
            "INSERT INTO meta VALUES (?,?)",
            [("schema_version", SCHEMA_VERSION), ("counts", json.dumps(self._counts))],
        )
        db.commit()
        db.execute("VACUUM")
        db.close()
        self._closed = True


class PageStore:
    """Read-only lookups over a store written by `PageStoreWriter`; safe to share across threads."""

    def __init__(self, path: str | PathLike) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise IndexNotBuiltError(
                f"page store {self.path} does not exist; build it with "
                "`wikisim build INPUT --out DIR`"
            )
        self._lock = threading.Lock()
        self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise IndexNotBuiltError(
                f"page store {self.path} is not a complete store ({e}); rebuild it"
            ) from e
        if row is None or row[0] != SCHEMA_VERSION:
            raise IndexNotBuiltError(
                f"page store {self.path} has schema {row and row[0]!r}, "
                f"expected {SCHEMA_VERSION!r}; rebuild it"
            )
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
        """Rows written per kind (links and categories as on the pages, before deduplication)."""
        return json.loads(self._one("SELECT value FROM meta WHERE key='counts'")[0])  # type: ignore[index]

    # --- pages -------------------------------------------------------------------------
    def get(self, page_id: int) -> Page | None:
        row = self._one("SELECT id, title, body FROM pages WHERE id=?", (page_id,))
        return None if row is None else self._page(row)

    def page_text(self, page_id: int) -> str | None:
        """A page's text alone (the passage store refers to spans of it)."""
        row = self._one("SELECT body FROM pages WHERE id=?", (page_id,))
        return None if row is None else unpack_first(row[0])

    def _page(self, row: tuple) -> Page:
        page_id, title, body = row
        text, url, description, sections, infobox_type, categories, links = unpack(body)
        infobox = None
        if infobox_type is not None:
            infobox = Infobox(
                infobox_type,
                tuple(
                    self._all(
                        "SELECT field, value FROM facts WHERE page_id=? ORDER BY n", (page_id,)
                    )
                ),
            )
        return Page(
            id=page_id,
            title=title,
            text=text,
            url=url or "",
            description=description,
            sections=tuple(
                Section(s[0], s[1], text[s[2] : s[3]] if len(s) == 4 else s[2]) for s in sections
            ),
            links=tuple(Link(*x) for x in links),
            infobox=infobox,
            categories=tuple(categories),
            citations=tuple(c for _, c in self._citations("WHERE page_id=?", (page_id,))),
        )

    def pages(self) -> Iterator[Page]:
        """Every page in id order, streamed."""
        last = -(2**63)
        while True:
            rows = self._all(
                "SELECT id, title, body FROM pages WHERE id > ? ORDER BY id LIMIT 256", (last,)
            )
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
        row = self._one(
            "SELECT target FROM redirects WHERE lower=? ORDER BY source LIMIT 1", (key.lower(),)
        )
        if row and self._one("SELECT 1 FROM pages WHERE title=?", (row[0],)):
            return row[0]
        return None

    def by_title(self, title: str) -> Page | None:
        resolved = self.resolve_title(title)
        if resolved is None:
            return None
        row = self._one("SELECT id, title, body FROM pages WHERE title=?", (resolved,))
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
        return [
            r[0]
            for r in self._all(
                "SELECT source FROM redirects WHERE target=? ORDER BY source", (resolved,)
            )
        ]

    def pages_named(
        self, names: Sequence[str], qualified: bool = True
    ) -> dict[str, tuple[int, ...]]:
        """Lower-cased names -> the pages each names: a title in any letter case, a redirect's
        source, and with `qualified` a title with a trailing qualifier ("hello love" ->
        "Hello Love (song)"). Names that name no page are left out.

        Index lookups only (no title is held in memory), so a text's candidate names are
        looked up in a store of any size; a statement per 500 names, not per name (a
        passage has ~170 candidate names: 3x faster).
        """
        wanted = list(dict.fromkeys(names))
        found: dict[str, set[int]] = {}
        with self._lock:
            for i in range(0, len(wanted), NAMES_PER_STATEMENT):
                part = wanted[i : i + NAMES_PER_STATEMENT]
                sql = (
                    f"WITH n(name) AS (VALUES {','.join(['(?)'] * len(part))}) "
                    "SELECT n.name, p.id FROM n JOIN pages p ON p.lower = n.name"
                    + (
                        " UNION SELECT n.name, p.id FROM n JOIN pages p"
                        " ON p.lower >= n.name || ' (' AND p.lower < n.name || ' )'"
                        if qualified
                        else ""
                    )
                    + " UNION SELECT n.name, p.id FROM n JOIN redirects r ON r.lower = n.name"
                    " JOIN pages p ON p.title = r.target"
                )
                for name, page_id in self._db.execute(sql, part):
                    found.setdefault(name, set()).add(page_id)
        return {name: tuple(sorted(found[name])) for name in wanted if name in found}

    def links_from(self, page_id: int) -> list[Link]:
        row = self._one("SELECT body FROM pages WHERE id=?", (page_id,))
        return [] if row is None else [Link(*x) for x in unpack(row[0])[-1]]

    def links_to(self, title: str) -> list[tuple[int, Link]]:
        """(source page id, link) for every link to the page, or to one of its redirects."""
        resolved = self.resolve_title(title) or normalize_title(title)
        names = [resolved, *self.aliases(resolved)]
        marks = ",".join("?" * len(names))
        sources = self._all(
            f"SELECT DISTINCT page_id FROM links WHERE target IN ({marks}) ORDER BY page_id",
            tuple(names),
        )
        wanted = set(names)
        return [
            (pid, link)
            for (pid,) in sources
            for link in self.links_from(pid)
            if link.target in wanted
        ]

    def _citations(self, where: str, args: tuple) -> list[tuple[int, Citation]]:
        rows = self._all(f"SELECT page_id, body FROM citations {where}", args)
        return [
            (pid, Citation(title, tuple(authors), year, venue, doi, url))
            for pid, body in rows
            for title, authors, year, venue, doi, url in unpack(body)
        ]

    def citations(self) -> Iterator[tuple[int, Citation]]:
        """Every citation, by page id then order on the page, streamed 256 pages at a time."""
        last = -(2**63)
        while batch := self._citations("WHERE page_id > ? ORDER BY page_id LIMIT 256", (last,)):
            yield from batch
            last = batch[-1][0]

    def closest_titles(self, text: str, n: int = 5) -> list[str]:
        """Page titles nearest to `text` in spelling (redirects count as their target)."""
        if self._titles is None:
            names = [(t.lower(), t) for _, t in self.titles()]
            names += [
                (s.lower(), t)
                for s, t in self._all(
                    "SELECT r.source, r.target FROM redirects r JOIN pages p ON p.title = r.target"
                )
            ]
            self._titles = sorted(names)
        keys = [k for k, _ in self._titles]
        target_of = dict(reversed(self._titles))
        out: list[str] = []
        for key in difflib.get_close_matches(
            normalize_title(text).lower(), keys, n=4 * n, cutoff=0.5
        ):
            title = target_of[key]
            if title not in out:
                out.append(title)
        return out[:n]
