"""The records every layer shares: a parsed page and its parts.

Frozen and made of tuples so that pages hash, compare and pickle the same in every
process: the workers of a parallel build must give byte-identical output.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

WIKI_URL_PREFIX = "https://en.wikipedia.org/wiki/"
# a character reference with its semicolon, the only form MediaWiki decodes in a title
CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]+|#x[0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);")


def decode_references(text: str) -> str:
    """Character references with their semicolon decoded ("&amp;" -> "&"); a bare "&" stays."""
    if "&" not in text:
        return text
    return CHARACTER_REFERENCE.sub(lambda m: html.unescape(m.group(0)), text)


def normalize_title(title: str) -> str:
    """MediaWiki's canonical form: character references decoded (HotpotQA writes "Lilo &amp;
    Stitch"), underscores to spaces, collapsed spaces, first letter upper."""
    t = " ".join(decode_references(unquote(title)).replace("_", " ").split())
    t = t.split("#", 1)[0].strip()
    return t[:1].upper() + t[1:] if t else t


def title_to_url(title: str) -> str:
    return WIKI_URL_PREFIX + quote(normalize_title(title).replace(" ", "_"), safe="()_,'!:-.~")


def url_to_title(url: str) -> str | None:
    """The title behind a Wikipedia article URL (any language-neutral host form), else None."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc.endswith("wikipedia.org"):
        return None
    if parts.path.startswith("/wiki/") and len(parts.path) > len("/wiki/"):
        return normalize_title(parts.path[len("/wiki/") :])
    return None


@dataclass(frozen=True)
class Link:
    """A wikilink: normalised target, its anchor text, the sentence it sits in.

    `field` is the infobox field the link sits in (e.g. "birth_place"), or "" in body text:
    infobox links become typed relations in the knowledge graph.
    """

    target: str
    anchor: str
    sentence: str = ""
    field: str = ""


@dataclass(frozen=True)
class Section:
    title: str  # "" for the lead
    level: int  # 0 for the lead, 2 for ==H==, 3 for ===H===, ...
    text: str


@dataclass(frozen=True)
class Infobox:
    type: str  # e.g. "person", "country" (lower-cased template name without "Infobox ")
    fields: tuple[tuple[str, str], ...]  # (field, clean value), in template order

    def get(self, name: str, default: str = "") -> str:
        return next((v for k, v in self.fields if k == name), default)


@dataclass(frozen=True)
class Citation:
    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str = ""
    doi: str = ""
    url: str = ""


@dataclass(frozen=True)
class Page:
    id: int
    title: str
    text: str
    url: str = ""
    description: str = ""  # the first sentence
    sections: tuple[Section, ...] = ()
    links: tuple[Link, ...] = ()
    infobox: Infobox | None = None
    categories: tuple[str, ...] = ()
    citations: tuple[Citation, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.url:
            object.__setattr__(self, "url", title_to_url(self.title))


@dataclass(frozen=True)
class Redirect:
    source: str  # normalised title of the redirect page
    target: str  # normalised title it points to (fragment dropped)
