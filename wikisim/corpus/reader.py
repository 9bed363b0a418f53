"""`read_pages`: any supported input -> a stream of `Page` and `Redirect`, in input order.

Reading (I/O, format detection) stays in this process; wikitext parsing, the slow
part, runs in `workers` processes on chunks of raw pages. Chunks are mapped in
order, so the stream is identical whatever `workers` is.
"""

from __future__ import annotations

import logging
import multiprocessing
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from os import PathLike
from pathlib import Path

from wikisim.corpus.formats import open_input
from wikisim.corpus.page import Page, Redirect, Section, normalize_title
from wikisim.corpus.raw import RawPage
from wikisim.corpus.report import IngestReport, SkippedPage
from wikisim.corpus.wikitext import clean_block, first_sentence, parse_wikitext
from wikisim.errors import ConfigError, CorpusError

log = logging.getLogger(__name__)

CHUNK_PAGES = 16
_REDIRECT = re.compile(r"^\s*#\s*(?:redirect|weiterleitung)\s*:?\s*\[\[([^\]|#]*)", re.IGNORECASE)

Result = tuple[str, object]  # ("page", Page) | ("redirect", Redirect) | ("skip", reason)


def convert(raw: RawPage) -> Result:
    """One raw page -> its record, or the reason it is skipped. Never raises."""
    try:
        if raw.kind == "skip":
            return ("skip", raw.body)
        if raw.kind == "redirect":
            return _redirect(raw.title, raw.body)
        page_id = (
            raw.page_id if raw.page_id is not None else 0
        )  # the reader numbers pages before converting
        if raw.kind == "wiki":
            m = _REDIRECT.match(raw.body)
            if m:
                return _redirect(raw.title, m.group(1))
            page = parse_wikitext(page_id, raw.title, raw.body)
        else:
            page = text_page(page_id, raw.title, raw.body)
        if not page.text:
            return ("skip", "empty text: nothing readable after parsing")
        return ("page", page)
    except Exception as e:  # a malformed page is skipped, never fatal
        return ("skip", f"parse error: {type(e).__name__}: {e}")


def _redirect(title: str, target: str) -> Result:
    source, dest = normalize_title(title), normalize_title(target)
    if not dest:
        return ("skip", f"bad redirect: empty target {target!r}")
    return ("redirect", Redirect(source, dest))


def text_page(page_id: int, title: str, text: str) -> Page:
    """A page from plain paragraphs (WikiExtractor, passage files): one lead section, no links."""
    body = clean_block(text)
    return Page(
        id=page_id,
        title=normalize_title(title),
        text=body,
        description=first_sentence(body.split("\n", 1)[0]) if body else "",
        sections=(Section("", 0, body),) if body else (),
    )


def _convert_chunk(chunk: list[RawPage]) -> list[Result]:
    return [convert(r) for r in chunk]


def _chunks(items: Iterable[RawPage], n: int) -> Iterator[list[RawPage]]:
    """Chunks of `n`; when the input breaks, the pages read before it still come out first."""
    chunk: list[RawPage] = []
    try:
        for item in items:
            chunk.append(item)
            if len(chunk) == n:
                yield chunk
                chunk = []
    except CorpusError:
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


class PageStream(Iterator[Page | Redirect]):
    """The stream `read_pages` returns; `.report` is complete once it is exhausted."""

    def __init__(
        self, inputs: Sequence[Path], workers: int, report: IngestReport, pool=None
    ) -> None:
        self.report = report
        self._inputs = inputs
        self._workers = workers
        self._pool = pool
        self._seen: set[str] = set()
        self._max_id = 0
        self._it = self._generate()

    def __next__(self) -> Page | Redirect:
        return next(self._it)

    def _raw(self, path: Path) -> Iterator[RawPage]:
        """Raw pages in file order; ids given to id-less passages; repeated titles skipped."""
        for raw in open_input(path):
            if raw.kind == "namespace":
                self.report.non_article += 1
                continue
            if raw.kind == "skip" or raw.kind == "redirect":
                yield raw
                continue
            key = normalize_title(raw.title)
            if key in self._seen:
                yield raw._replace(kind="skip", body=f"duplicate title: {key!r} was read before")
                continue
            self._seen.add(key)
            page_id = self._max_id + 1 if raw.page_id is None else raw.page_id
            raw = raw._replace(page_id=page_id)
            self._max_id = max(self._max_id, page_id)
            if raw.kind == "wiki":
                self.report.wikitext_bytes += len(raw.body.encode("utf-8"))
            yield raw

    def _generate(self) -> Iterator[Page | Redirect]:
        pool = self._pool
        if pool is None and self._workers > 1:
            # fork is the fastest start, but forking a process whose other threads hold locks (a server,
            # a thread pool, the JVM) can deadlock the children: then a fork server starts them clean
            method = "fork" if threading.active_count() == 1 else "forkserver"
            pool = multiprocessing.get_context(method).Pool(self._workers)
        try:
            for path in self._inputs:
                self.report.files.append(str(path))
                for chunk, results in self._results(self._raw(path), pool):
                    for raw, result in zip(chunk, results, strict=True):
                        yield from self._emit(path, raw, result)
        finally:
            if pool is not None:
                pool.terminate()

    def _results(self, raws: Iterator[RawPage], pool) -> Iterator[tuple[list, list[Result]]]:
        """Chunks with their results, in order; at most a few chunks per worker in flight."""
        if pool is None:
            for chunk in _chunks(raws, CHUNK_PAGES):
                yield chunk, _convert_chunk(chunk)
            return
        pending: deque = deque()
        try:
            for chunk in _chunks(raws, CHUNK_PAGES):
                pending.append((chunk, pool.apply_async(_convert_chunk, (chunk,))))
                if len(pending) >= 4 * self._workers:
                    done, res = pending.popleft()
                    yield done, res.get()
        except CorpusError:
            while pending:  # the pages read before the break still come out
                done, res = pending.popleft()
                yield done, res.get()
            raise
        while pending:
            done, res = pending.popleft()
            yield done, res.get()

    def _emit(self, path: Path, raw: RawPage, result: Result) -> Iterator[Page | Redirect]:
        kind, value = result
        if kind == "skip":
            log.warning("skipped page %r (id %s) in %s: %s", raw.title, raw.page_id, path, value)
            self.report.skipped.append(SkippedPage(str(path), raw.page_id, raw.title, str(value)))
            return
        self.report.count(value)  # type: ignore[arg-type]
        yield value  # type: ignore[misc]


def read_pages(
    inputs: Sequence[str | PathLike] | str | PathLike,
    workers: int = 1,
    report: IngestReport | None = None,
    pool=None,
) -> PageStream:
    """Stream the articles and redirects of every input, in input order.

    Args:
        inputs: files in any supported format (detected from their content).
        workers: processes that parse wikitext; the output does not depend on it.
        report: an `IngestReport` to fill; the stream's `.report` is a new one otherwise.
        pool: where chunks are parsed instead of a local process pool: anything with
            multiprocessing.Pool's `apply_async(fn, args).get()` and `terminate()` (the Ray
            engine's); `workers` then sets how many chunks are in flight per worker.

    Raises:
        CorpusError: on an unknown format, a truncated or broken file (while streaming).
    """
    if isinstance(inputs, str | PathLike):
        inputs = [inputs]
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers={workers!r}: expected an integer >= 1")
    paths = [Path(p) for p in inputs]
    return PageStream(paths, workers, report if report is not None else IngestReport(), pool)
