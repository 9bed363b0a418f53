"""Pages cut into retrieval passages, and the SQLite table that maps docids back to text.

Every index row number (bm25s document index, faiss vector id) is the passage's `row`
here, so one store serves every backend and snippets come from one place.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from wikisim.corpus.page import Page
from wikisim.errors import ConfigError, IndexNotBuiltError

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
            if chunks and len(tail.split()) < MIN_PASSAGE_WORDS and len(
                (chunks[-1] + " " + tail).split()
            ) <= words + MIN_PASSAGE_WORDS:
                chunks[-1] = chunks[-1] + "\n" + tail
            else:
                chunks.append(tail)
        texts.extend((heading, c) for c in chunks)
    return [
        Passage(f"{page.id}#{n}", page.id, page.title, page.url, heading, text)
        for n, (heading, text) in enumerate(texts)
    ]


_SCHEMA = """
CREATE TABLE passages (
    row INTEGER PRIMARY KEY, docid TEXT NOT NULL UNIQUE, page_id INTEGER NOT NULL,
    title TEXT NOT NULL, url TEXT NOT NULL, section TEXT NOT NULL, text TEXT NOT NULL
);
"""
_COLUMNS = "docid, page_id, title, url, section, text"


class PassageStoreWriter:
    """Appends passages in order; their row numbers become index ids in every backend."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(self.path)
        self._db.executescript(_SCHEMA)
        self._rows = 0

    def add(self, passages: Iterable[Passage]) -> None:
        batch = [(self._rows + i, p.docid, p.page_id, p.title, p.url, p.section, p.text)
                 for i, p in enumerate(passages)]
        self._db.executemany(f"INSERT INTO passages (row, {_COLUMNS}) VALUES (?,?,?,?,?,?,?)", batch)
        self._rows += len(batch)

    def __len__(self) -> int:
        return self._rows

    def close(self) -> None:
        self._db.execute("CREATE INDEX passages_page ON passages (page_id, row)")
        self._db.commit()
        self._db.close()


class PassageStore:
    """Read-only access to passages by docid, by page, or by index row.

    Recently read passages are kept (they are immutable): a search looks its hits up
    twice, by row to rank and by docid to make hits. Safe to share between threads.
    """

    CACHE = 4096

    def __init__(self, path: Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise IndexNotBuiltError(f"no passage store at {path}; run `wikisim build INPUT... --out {path.parent}`")
        self.path = path
        self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        self._len = self._db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        self._by_row: OrderedDict[int, Passage] = OrderedDict()
        self._by_docid: dict[str, int] = {}
        self._docid_of: dict[int, str] = {}
        self._lock = threading.Lock()

    def _remember(self, row: int, passage: Passage) -> None:
        self._by_row[row] = passage
        self._by_docid[passage.docid] = row
        if len(self._by_row) > self.CACHE:
            _, old = self._by_row.popitem(last=False)
            del self._by_docid[old.docid]

    def __len__(self) -> int:
        return self._len

    def get(self, docid: str) -> Passage | None:
        return self.by_docids([docid]).get(docid)

    def for_page(self, page_id: int) -> list[Passage]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM passages WHERE page_id = ? ORDER BY row", (page_id,)
            ).fetchall()
        return [Passage(*r) for r in rows]

    def by_rows(self, rows: Sequence[int]) -> dict[int, Passage]:
        with self._lock:
            return self._by_rows(rows)

    def docids(self, rows: Sequence[int]) -> dict[int, str]:
        """Row -> docid without reading texts: what ranking needs (hybrid reads 100+ rows a list).

        Docids are short and never change, so every one looked up stays known (at most the
        corpus's docids, a few MB for 150k passages): ranking then costs no SQL once warm.
        """
        with self._lock:
            known = self._docid_of
            missing = [r for r in map(int, rows) if r not in known]
            if missing:
                marks = ",".join("?" * len(missing))
                known.update(self._db.execute(f"SELECT row, docid FROM passages WHERE row IN ({marks})", missing))
            return {r: known[r] for r in map(int, rows) if r in known}

    def by_docids(self, docids: Sequence[str]) -> dict[str, Passage]:
        with self._lock:
            return self._by_docids(docids)

    def _by_rows(self, rows: Sequence[int]) -> dict[int, Passage]:
        out = {r: self._by_row[r] for r in map(int, rows) if r in self._by_row}
        missing = [int(r) for r in rows if int(r) not in out]
        if missing:
            marks = ",".join("?" * len(missing))
            for r in self._db.execute(f"SELECT row, {_COLUMNS} FROM passages WHERE row IN ({marks})", missing):
                out[r[0]] = Passage(*r[1:])
                self._remember(r[0], out[r[0]])
        return out

    def _by_docids(self, docids: Sequence[str]) -> dict[str, Passage]:
        out = {d: self._by_row[self._by_docid[d]] for d in docids if d in self._by_docid}
        missing = [d for d in docids if d not in out]
        if missing:
            marks = ",".join("?" * len(missing))
            for r in self._db.execute(f"SELECT row, {_COLUMNS} FROM passages WHERE docid IN ({marks})", missing):
                out[r[1]] = Passage(*r[1:])
                self._remember(r[0], out[r[1]])
        return out

    def __iter__(self) -> Iterator[Passage]:
        """Every passage in row order, read through a connection of its own (safe to interleave)."""
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            for r in db.execute(f"SELECT {_COLUMNS} FROM passages ORDER BY row"):
                yield Passage(*r)
        finally:
            db.close()

    def close(self) -> None:
        self._db.close()
