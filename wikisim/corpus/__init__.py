"""Reading dumps and passage files into `Page` records, and the SQLite `PageStore`."""

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
from wikisim.corpus.reader import PageStream, read_pages
from wikisim.corpus.report import IngestReport, SkippedPage
from wikisim.corpus.store import PageStore, PageStoreWriter
from wikisim.corpus.wikitext import parse_wikitext

__all__ = [
    "Citation",
    "Infobox",
    "IngestReport",
    "Link",
    "Page",
    "PageStore",
    "PageStoreWriter",
    "PageStream",
    "Redirect",
    "Section",
    "SkippedPage",
    "normalize_title",
    "parse_wikitext",
    "read_pages",
    "title_to_url",
    "url_to_title",
]
