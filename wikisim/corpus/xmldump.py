"""MediaWiki XML export (`.xml`, `.xml.bz2`, multistream `.bz2` too), streamed page by page.

Elements are cleared as soon as a page is read so memory stays flat whatever the
dump size; a truncated file or broken XML stops with the file and the last good page.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from wikisim.corpus.raw import RawPage
from wikisim.errors import CorpusError


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_xml(path: Path, stream: BinaryIO) -> Iterator[RawPage]:
    """Yield one `RawPage` per `<page>`; those outside namespace 0 as kind "namespace"."""
    last = "none (failed before the first page)"
    context = ET.iterparse(stream, events=("start", "end"))
    try:
        _, root = next(context)
        if _local(root.tag) != "mediawiki":
            raise CorpusError(
                f"{path}: root element <{_local(root.tag)}>, expected <mediawiki> "
                "(a MediaWiki XML export)"
            )
        for event, el in context:
            if event != "end" or _local(el.tag) != "page":
                continue
            raw = _page(el)
            root.clear()
            if raw.kind not in ("skip", "namespace"):
                last = f"{raw.title!r} (id {raw.page_id})"
            yield raw
    except (ET.ParseError, EOFError, OSError) as e:
        raise CorpusError(
            f"{path}: truncated or broken XML ({e}); last good page: {last}. "
            "Re-download or re-compress the file; nothing after that page was read."
        ) from e


def _page(el: ET.Element) -> RawPage:
    title = ns = page_id = redirect = text = None
    for child in el:
        tag = _local(child.tag)
        if tag == "title":
            title = child.text
        elif tag == "ns":
            ns = child.text
        elif tag == "id":
            page_id = child.text
        elif tag == "redirect":
            redirect = child.get("title")
        elif tag == "revision":
            for sub in child:
                if _local(sub.tag) == "text":
                    text = sub.text or ""
    if ns is not None and ns.strip() != "0":
        return RawPage("namespace", None, title or "", ns.strip())
    try:
        pid = int(page_id)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return RawPage("skip", None, title or "", f"bad page id: {page_id!r}")
    if not title or not title.strip():
        return RawPage("skip", pid, "", "missing title")
    if redirect is not None:
        return RawPage("redirect", pid, title, redirect)
    if text is None:
        return RawPage("skip", pid, title, "no revision text")
    return RawPage("wiki", pid, title, text)
