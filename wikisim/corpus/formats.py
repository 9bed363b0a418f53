"""Input formats: detected from the content (never the file name), each streamed as `RawPage`s.

Supported: MediaWiki XML export; WikiExtractor `<doc>` text and its `--json` lines;
JSONL passages (`{"id","contents"}` with a quoted title line as DPR/pyserini write it,
or `{"id","title","text"}`); JSON corpus documents (HotpotQA's title -> sentences,
MuSiQue's and 2Wiki's list of `{"title","text"}`). Any file may be .bz2 or .gz.
Passages of one title become one page, paragraphs in order, wherever they sit in the file
(JSONL: by byte offsets, the text stays on disk; a JSON document is one value, so it is loaded).
"""

from __future__ import annotations

import bz2
import gzip
import html
import io
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from wikisim.corpus.raw import RawPage
from wikisim.corpus.xmldump import read_xml
from wikisim.errors import CorpusError

EXPECTED = (
    "expected a MediaWiki XML export (.xml/.xml.bz2), WikiExtractor output (<doc id url title> "
    'text or --json lines), JSONL passages ({"id","contents"} or {"id","title","text"}), or a '
    'JSON corpus (a dict title -> list of sentences, or a list of {"title","text"})'
)
_DOC = re.compile(r'<doc\s+id="([^"]*)"(?:\s+url="[^"]*")?\s+title="([^"]*)"\s*>')


def open_binary(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is bzip2 or gzip."""
    try:
        with open(path, "rb") as f:
            magic = f.read(3)
    except OSError as e:
        raise CorpusError(f"{path}: cannot open ({e.strerror}); check the path") from e
    if magic == b"BZh":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")  # noqa: SIM115 - closed by the reader that streams it


def detect_format(path: Path, head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("<?xml", "<mediawiki")):
        return "mediawiki-xml"
    if text.startswith("<doc"):
        return "wikiextractor"
    if text.startswith("["):
        return "json-document"
    if text.startswith("{"):
        line = text.split("\n", 1)[0]
        try:
            first = json.loads(line)
        except json.JSONDecodeError:
            return "json-document"
        if isinstance(first, dict):
            if "contents" in first:
                return "jsonl-contents"
            if "title" in first and "text" in first:
                return "wikiextractor-json" if "url" in first else "jsonl-title-text"
            if first and all(isinstance(v, list | str) for v in first.values()):
                return "json-document"
    raise CorpusError(f"{path}: unknown format (starts with {text[:60]!r}); {EXPECTED}")


def open_input(path: Path) -> Iterator[RawPage]:
    """Detect the format of `path` and stream its pages."""
    stream = open_binary(path)
    try:
        try:
            head = stream.peek(65536)[:65536]  # type: ignore[attr-defined]
        except (OSError, EOFError) as e:
            raise CorpusError(f"{path}: unreadable ({e}); {EXPECTED}") from e
        fmt = detect_format(path, head)
        if fmt == "mediawiki-xml":
            yield from read_xml(path, stream)
            return
        if fmt.startswith(("jsonl", "wikiextractor-json")):
            yield from _jsonl(path, stream, fmt)
            return
        lines = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        if fmt == "wikiextractor":
            yield from _wikiextractor(path, lines)
        else:
            yield from _json_document(path, lines)
    except (EOFError, OSError) as e:
        raise CorpusError(f"{path}: truncated or corrupt ({e}); re-download the file") from e
    finally:
        stream.close()


def _wikiextractor(path: Path, lines: Iterator[str]) -> Iterator[RawPage]:
    head: tuple[str, str] | None = None
    body: list[str] = []
    for n, line in enumerate(lines, 1):
        if head is None:
            m = _DOC.match(line.strip())
            if m:
                head, body = (m.group(1), html.unescape(m.group(2))), []
            elif line.strip():
                raise CorpusError(f"{path}:{n}: text outside a <doc> block; {EXPECTED}")
        elif line.strip() == "</doc>":
            yield _extracted(head[0], head[1], body)
            head = None
        else:
            body.append(line.rstrip("\n"))
    if head is not None:
        raise CorpusError(f"{path}: truncated: <doc> of {head[1]!r} (id {head[0]}) has no </doc>")


def _extracted(doc_id: str, title: str, body: list[str]) -> RawPage:
    """WikiExtractor repeats the title as the first line; drop it."""
    while body and not body[0].strip():
        body.pop(0)
    if body and body[0].strip() == title.strip():
        body.pop(0)
    if not doc_id.strip().isdigit():
        return RawPage("skip", None, title, f"bad page id: {doc_id!r}")
    return RawPage("text", int(doc_id), title, "\n".join(body))


def _dpr_title(contents: str) -> tuple[str, str]:
    """DPR/pyserini `contents`: a title line (quoted as DPR writes it, or bare), then the passage."""
    first, nl, rest = contents.partition("\n")
    if not nl:
        return "", contents
    first = first.strip()
    if len(first) >= 2 and first[0] == first[-1] == '"':
        first = first[1:-1]
    return first, rest


def _record(path: Path, n: int, line: bytes, fmt: str) -> tuple[str, str, dict]:
    try:
        rec = json.loads(line)
        if fmt == "jsonl-contents":
            title, text = _dpr_title(rec["contents"])
        else:
            title, text = rec["title"], rec["text"]
        return str(title), str(text), rec
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise CorpusError(
            f"{path}:{n}: not a {fmt} record ({type(e).__name__}: {e}); {EXPECTED}"
        ) from e


def _jsonl(path: Path, stream: BinaryIO, fmt: str) -> Iterator[RawPage]:
    """Passages grouped by title in order of first appearance, wherever the repeats sit.

    Pass 1 keeps only byte offsets per title (the passages stay on disk: a compressed
    input is spooled to a temporary file), pass 2 reads each title's passages back.
    """
    if fmt == "wikiextractor-json":
        for n, line in enumerate(stream, 1):
            if line.strip():
                title, text, rec = _record(path, n, line, fmt)
                yield _extracted(str(rec.get("id", "")), title, text.split("\n"))
        return
    seekable = isinstance(stream, io.BufferedReader)
    src: BinaryIO = stream if seekable else tempfile.TemporaryFile()  # noqa: SIM115
    try:
        offsets: dict[str, list[int]] = {}
        pos = 0
        for n, line in enumerate(stream, 1):
            if not seekable:
                src.write(line)
            start, pos = pos, pos + len(line)
            if not line.strip():
                continue
            title, _, rec = _record(path, n, line, fmt)
            if not title.strip():
                yield RawPage("skip", None, str(rec.get("id", "")), f"no title: line {n}")
                continue
            offsets.setdefault(title, []).append(start)
        for title, starts in offsets.items():
            paras = []
            for start in starts:
                src.seek(start)
                paras.append(_record(path, 0, src.readline(), fmt)[1])
            yield RawPage("text", None, title, "\n".join(paras))
    finally:
        if not seekable:
            src.close()


def _json_document(path: Path, lines: io.TextIOWrapper) -> Iterator[RawPage]:
    try:
        doc = json.load(lines)
    except json.JSONDecodeError as e:
        raise CorpusError(f"{path}: broken or truncated JSON ({e}); {EXPECTED}") from e
    grouped: dict[str, list[str]] = {}
    if isinstance(doc, dict):
        for title, value in doc.items():
            if isinstance(value, list) and all(isinstance(s, str) for s in value):
                grouped.setdefault(title, []).append("".join(value).strip())
            elif isinstance(value, str):
                grouped.setdefault(title, []).append(value)
            else:
                raise CorpusError(
                    f"{path}: value of {title!r} is {type(value).__name__}, "
                    f"expected a list of sentences; {EXPECTED}"
                )
    elif isinstance(doc, list):
        for i, rec in enumerate(doc):
            if isinstance(rec, dict) and "title" in rec and "text" in rec:
                title, text = str(rec["title"]), rec["text"]
            elif isinstance(rec, dict) and "contents" in rec:
                title, text = _dpr_title(rec["contents"])
            else:
                raise CorpusError(
                    f'{path}: item {i} is not a {{"title","text"}} object; {EXPECTED}'
                )
            if isinstance(text, list):
                text = "".join(text)
            grouped.setdefault(title, []).append(str(text))
    for title, paras in grouped.items():
        yield RawPage("text", None, title, "\n".join(paras))
