"""Pages cut into retrieval passages, and the compressed SQLite store that maps docids back to text.

Every index row number (bm25s document index, faiss vector id) is the passage's `row`
here, so one store serves every backend and snippets come from one place.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wikisim.corpus.blob import pack, unpack
from wikisim.corpus.page import Page
from wikisim.errors import ConfigError, CorpusError, IndexNotBuiltError

if TYPE_CHECKING:
    from wikisim.corpus.store import PageStore

MIN_PASSAGE_WORDS = 20
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")


@dataclass(frozen=True)
class Passage:
    docid: str  # "<page_id>#<n>"
    page_id: int
    title: str
    url: str
    section: str  # heading of the section it comes from, "" for the lead
    text: str

    @property
    def contents(self) -> str:
        """What the indexes see: title line first (pyserini's convention), then heading and text.

        The title and heading make short passages findable by topic.
        """
        head = f"{self.title}\n{self.section}." if self.section else self.title
        return f"{head}\n{self.text}"


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text)) if s]


def _pieces(paragraph: str, budget: int) -> Iterator[str]:
    """A paragraph within the budget as is; a longer one by sentences, a huge sentence by words."""
    words = paragraph.split()
    if len(words) <= budget:
        yield " ".join(words)
        return
    current: list[str] = []
    for sentence in split_sentences(paragraph):
        sw = sentence.split()
        if len(sw) > budget:
            if current:
                yield " ".join(current)
                current = []
            for i in range(0, len(sw), budget):
                yield " ".join(sw[i : i + budget])
            continue
        if current and len(current) + len(sw) > budget:
            yield " ".join(current)
            current = []
        current.extend(sw)
    if current:
        yield " ".join(current)


def _sections(page: Page) -> list[tuple[str, str]]:
    if page.sections:
        return [(s.title, s.text) for s in page.sections if s.text.strip()]
    return [("", page.text)] if page.text.strip() else []


def split_page(page: Page, words: int = 150) -> list[Passage]:
    """Cut a page along sections, then paragraphs, packing paragraphs up to `words` words.

    A passage never spans two sections, so each carries one heading; a trailing piece
    shorter than MIN_PASSAGE_WORDS joins the previous passage of its section when the
    budget allows, so no passage is a stray line.
    """
    if words < MIN_PASSAGE_WORDS:
        raise ConfigError(f"passage_words must be >= {MIN_PASSAGE_WORDS}, got {words}")
    texts: list[tuple[str, str]] = []
    for heading, body in _sections(page):
        chunks: list[str] = []
        current: list[str] = []
        for paragraph in (p for p in body.split("\n") if p.strip()):
            for piece in _pieces(paragraph, words):
                n = len(piece.split())
                if current and sum(len(c.split()) for c in current) + n > words:
                    chunks.append("\n".join(current))
                    current = []
                current.append(piece)
        if current:
            tail = "\n".join(current)
            if (
                chunks
                and len(tail.split()) < MIN_PASSAGE_WORDS
                and len((chunks[-1] + " " + tail).split()) <= words + MIN_PASSAGE_WORDS
            ):
                chunks[-1] = chunks[-1] + "\n" + tail
            else:
                chunks.append(tail)
        texts.extend((heading, c) for c in chunks)
    return [
        Passage(f"{page.id}#{n}", page.id, page.title, page.url, heading, text)
        for n, (heading, text) in enumerate(texts)
    ]


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages(page_id INTEGER PRIMARY KEY, first_row INTEGER NOT NULL, n INTEGER NOT NULL,
                   body BLOB NOT NULL);
"""
_INDEXES = "CREATE UNIQUE INDEX pages_first_row ON pages(first_row);"
SCHEMA_VERSION = "2"


def _split_docid(docid: str) -> tuple[int, int] | None:
    """ "<page_id>#<n>" -> (page_id, n); None for anything else."""
    page, sep, n = docid.partition("#")
    try:
        return (int(page), int(n)) if sep and n.isdigit() else None
    except ValueError:
        return None


class PassageStoreWriter:
    """Appends pages' passages in order; their row numbers become index ids in every backend.

    A page's passages are one compressed record (title and URL once, then heading and text
    of each): rows are contiguous per page, so a row maps to (page, n) through the page's
    first row and a docid "<page_id>#<n>" to a row without a table of passages.

    With `pages` (the page store file the build writes beside it), a passage that is a
    span of its page's text is kept as that span's offsets: the text is stored once, in
    the page store, which the reader then opens too.
    """

    def __init__(self, path: Path, pages: Path | None = None) -> None:
        self.path = Path(path)
        self._pages = pages
        self._db = sqlite3.connect(self.path)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        self._rows = 0

    def add(self, passages: Iterable[Passage], text: str | None = None) -> None:
        """The passages of one page, as `split_page` cut them ("<page_id>#0", "#1", ...).

        `text` is the page's text as the page store holds it (only with `pages` given).
        """
        passages = list(passages)
        if not passages:
            return
        first = passages[0]
        for n, p in enumerate(passages):
            if p.page_id != first.page_id or p.docid != f"{first.page_id}#{n}":
                raise CorpusError(
                    f"passage {p.docid!r} (page {p.page_id}) is not passage #{n} of page {first.page_id}: "
                    "add one page's passages at a time, in order, as split_page cuts them"
                )
        if text is not None and self._pages is None:
            raise ConfigError(
                "PassageStoreWriter.add got a page text but no page store to refer to; "
                "pass pages= (the page store file) to the writer"
            )
        body = pack([first.title, first.url, _spans(passages, text)])
        try:
            self._db.execute(
                "INSERT INTO pages VALUES (?,?,?,?)",
                (first.page_id, self._rows, len(passages), body),
            )
        except sqlite3.IntegrityError as e:
            raise CorpusError(
                f"the passages of page {first.page_id} ({first.title!r}) were added twice"
            ) from e
        self._rows += len(passages)

    def __len__(self) -> int:
        return self._rows

    def close(self) -> None:
        self._db.executescript(_INDEXES)
        meta = [("schema_version", SCHEMA_VERSION), ("rows", str(self._rows))]
        if self._pages is not None:
            meta.append(("text_in", self._pages.name))
        self._db.executemany("INSERT INTO meta VALUES (?,?)", meta)
        self._db.commit()
        self._db.close()


def _spans(passages: list[Passage], text: str | None) -> list[list]:
    """[heading, start, end] where a passage is text[start:end], else [heading, its text]."""
    out: list[list] = []
    at = 0
    for p in passages:
        start = -1 if text is None else text.find(p.text, at)
        if start < 0 and text is not None:
            start = text.find(p.text)
        if start >= 0:
            at = start + len(p.text)
            out.append([p.section, start, start + len(p.text)])
        else:
            out.append([p.section, p.text])
    return out


def _unpack_page(page_id: int, body: bytes, page_text: Callable[[int], str]) -> list[Passage]:
    title, url, parts = unpack(body)
    text = page_text(page_id) if any(len(part) == 3 for part in parts) else ""
    return [
        Passage(
            f"{page_id}#{n}",
            page_id,
            title,
            url,
            part[0],
            text[part[1] : part[2]] if len(part) == 3 else part[1],
        )
        for n, part in enumerate(parts)
    ]


class PassageStore:
    """Read-only access to passages by docid, by page, or by index row.

    Recently read pages' passages are kept (they are immutable): a search looks its hits
    up twice, by row to rank and by docid to make hits. Safe to share between threads.
    """

    CACHE = 1024  # pages

    def __init__(self, path: Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise IndexNotBuiltError(
                f"no passage store at {path}; run `wikisim build INPUT... --out {path.parent}`"
            )
        self.path = path
        self._db = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
        try:
            meta = dict(self._db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as e:
            raise IndexNotBuiltError(
                f"passage store {path} is not a complete store ({e}); rebuild the index "
                f"with `wikisim build INPUT... --out {path.parent}`"
            ) from e
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexNotBuiltError(
                f"passage store {path} has schema {meta.get('schema_version')!r}, expected "
                f"{SCHEMA_VERSION!r}; rebuild it with `wikisim build INPUT... --out {path.parent}`"
            )
        self._len = int(meta["rows"])
        self._text_store: PageStore | None = None
        if "text_in" in meta:
            from wikisim.corpus.store import PageStore

            self._text_store = PageStore(path.parent / meta["text_in"])
        self._pages: OrderedDict[int, list[Passage]] = OrderedDict()
        self._docid_of: dict[int, str] = {}
        self._title_of: dict[int, tuple[str, int]] = {}  # page id -> (title, passages)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._len

    @property
    def page_store(self) -> PageStore | None:
        """The page store the passages' texts are spans of (its titles and links), if any."""
        return self._text_store

    def get(self, docid: str) -> Passage | None:
        return self.by_docids([docid]).get(docid)

    def _page(self, page_id: int) -> list[Passage]:
        """A page's passages (lock held), decompressed once while they stay in the cache."""
        cached = self._pages.get(page_id)
        if cached is not None:
            self._pages.move_to_end(page_id)
            return cached
        row = self._db.execute("SELECT body FROM pages WHERE page_id = ?", (page_id,)).fetchone()
        passages = [] if row is None else _unpack_page(page_id, row[0], self._page_text)
        self._pages[page_id] = passages
        if len(self._pages) > self.CACHE:
            self._pages.popitem(last=False)
        return passages

    def _page_text(self, page_id: int) -> str:
        text = self._text_store.page_text(page_id) if self._text_store is not None else None
        if text is None:
            raise IndexNotBuiltError(
                f"passage store {self.path} refers to page {page_id}, which its page "
                f"store does not hold; rebuild the index (`wikisim build ... --out {self.path.parent}`)"
            )
        return text

    def for_page(self, page_id: int) -> list[Passage]:
        with self._lock:
            return list(self._page(page_id))

    def _locate(self, row: int) -> tuple[int, int] | None:
        """(page id, n) of an index row, or None past the end."""
        if not 0 <= row < self._len:
            return None
        found = self._db.execute(
            "SELECT page_id, first_row FROM pages WHERE first_row <= ? "
            "ORDER BY first_row DESC LIMIT 1",
            (row,),
        ).fetchone()
        return None if found is None else (found[0], row - found[1])

    def by_rows(self, rows: Sequence[int]) -> dict[int, Passage]:
        out: dict[int, Passage] = {}
        with self._lock:
            for r in map(int, rows):
                where = self._locate(r)
                if where is not None:
                    out[r] = self._page(where[0])[where[1]]
        return out

    def docids(self, rows: Sequence[int]) -> dict[int, str]:
        """Row -> docid without decompressing texts: what ranking needs (hybrid reads 100+ rows a list).

        Docids are short and never change, so every one looked up stays known (at most the
        corpus's docids, a few MB for 150k passages): ranking then costs no SQL once warm.
        """
        with self._lock:
            known = self._docid_of
            for r in map(int, rows):
                if r not in known and (where := self._locate(r)) is not None:
                    known[r] = f"{where[0]}#{where[1]}"
            return {r: known[r] for r in map(int, rows) if r in known}

    def titles(self, docids: Sequence[str]) -> dict[str, str]:
        """Docid -> its page's title, from the passage records alone (no page text decoded).

        What a title-aware ranking reads for every candidate (200 a list): titles are short
        and never change, so each page's stays known once read, like `docids`.
        """
        out: dict[str, str] = {}
        with self._lock:
            known = self._title_of
            wanted = {w[0] for d in docids if (w := _split_docid(d)) is not None}
            missing = [p for p in wanted if p not in known]
            for i in range(0, len(missing), 500):
                part = missing[i : i + 500]
                marks = ",".join("?" * len(part))
                for page_id, n, body in self._db.execute(
                    f"SELECT page_id, n, body FROM pages WHERE page_id IN ({marks})", part
                ):
                    known[page_id] = (unpack(body)[0], n)
            for d in docids:
                w = _split_docid(d)
                if w is not None and w[0] in known and w[1] < known[w[0]][1]:
                    out[d] = known[w[0]][0]
        return out

    def by_docids(self, docids: Sequence[str]) -> dict[str, Passage]:
        out: dict[str, Passage] = {}
        with self._lock:
            for d in docids:
                where = _split_docid(d)
                if where is not None:
                    passages = self._page(where[0])
                    if where[1] < len(passages):
                        out[d] = passages[where[1]]
        return out

    def __iter__(self) -> Iterator[Passage]:
        """Every passage in row order, read through a connection of its own (safe to interleave)."""
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            for page_id, body in db.execute("SELECT page_id, body FROM pages ORDER BY first_row"):
                yield from _unpack_page(page_id, body, self._page_text)
        finally:
            db.close()

    def close(self) -> None:
        self._db.close()
        if self._text_store is not None:
            self._text_store.close()
