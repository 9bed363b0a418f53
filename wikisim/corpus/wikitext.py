"""Wikitext -> `Page`: one walk over mwparserfromhell's node tree.

Why one walk: parsing is the slow part of ingestion, so text, sections, links (with
the sentence each sits in), categories, citations and the infobox are all collected
in a single pass instead of one `filter_*` pass each.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import mwparserfromhell
from mwparserfromhell.nodes import (
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)

from wikisim.corpus.page import (
    Infobox,
    Link,
    Page,
    Section,
    decode_references,
    normalize_title,
)
from wikisim.corpus.templates import (
    citation_of,
    infobox_type,
    is_citation,
    is_infobox,
    render_inline,
    template_name,
)

CATEGORY_NS = frozenset(
    {
        "category",
        "kategorie",
        "catégorie",
        "categoría",
        "categoria",
        "kategoria",
        "categorie",
        "категория",
    }
)
FILE_NS = frozenset(
    {
        "file",
        "image",
        "media",
        "datei",
        "bild",
        "fichier",
        "archivo",
        "imagen",
        "immagine",
        "plik",
        "afbeelding",
        "ficheiro",
        "файл",
        "изображение",
    }
)
# prefixes whose links show their text but point outside the article namespace
OTHER_NS = frozenset(
    {
        "wikipedia",
        "wp",
        "help",
        "portal",
        "user",
        "talk",
        "special",
        "template",
        "wikt",
        "wiktionary",
        "s",
        "wikisource",
        "q",
        "wikiquote",
        "b",
        "wikibooks",
        "n",
        "wikinews",
        "v",
        "wikiversity",
        "voy",
        "commons",
        "meta",
        "m",
        "mw",
        "species",
        "d",
        "wikidata",
        "c",
        "w",
        "iarchive",
        "doi",
        "draft",
        "module",
        "mediawiki",
        "book",
        "timedtext",
        "user talk",
        "diskussion",
    }
)
_LANG = re.compile(r"^[a-z]{2,3}(-[a-z]{2,8})*$")
# tags whose contents are not prose (markup, media, refs are handled apart)
_DROP_TAGS = frozenset(
    {
        "math",
        "chem",
        "ce",
        "timeline",
        "imagemap",
        "score",
        "gallery",
        "templatedata",
        "graph",
        "mapframe",
        "maplink",
        "references",
        "hiero",
        "noinclude",
        "categorytree",
        "inputbox",
        "indicator",
        "section",
        "syntaxhighlight",
        "source",
        "style",
        "script",
    }
)
NON_PROSE_SECTIONS = frozenset(
    {
        "references",
        "notes",
        "footnotes",
        "external links",
        "citations",
        "sources",
        "notes and references",
        "references and notes",
        "einzelnachweise",
        "weblinks",
        "literatur",
        "notes and citations",
    }
)

# a sentence ends at . ! ? before a capital or digit, but not after No. St. Mr. U.S. and the like
_SENT_END = re.compile(
    r"(?<=[.!?])(?<!\bNo\.)(?<!\bSt\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bJr\.)(?<!\bSr\.)"
    r"(?<!\bvs\.)(?<!\bInc\.)(?<!\bCo\.)(?<!\bft\.)(?<!\bc\.)(?<!\bca\.)(?<!\b[A-Z]\.)"
    r"[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n"
)
_EMPTY_PARENS = re.compile(r"\(\s*(?:[,;:.–—-]\s*)*\)|\[\s*\]")
_SPACE_PUNCT = re.compile(r"\s+([,.;:!?)\]])")
_OPEN_SPACE = re.compile(r"([(\[])\s+")
_DOUBLE_PUNCT = re.compile(r"([,;])\s*[,;]+")
_PAREN_LEAD = re.compile(r"\(\s*(?:[,;]\s*)+")
_QUOTES = re.compile(r"'{2,}")
_MAGIC = re.compile(r"__[A-Z]+__")
_NOISE_LINE = re.compile(r"^[\W_]*$")
_NEEDS_TIDY = re.compile(r"[<'(\[]|__| [,.;:!?)\]]|[,;] ?[,;]|&\S+;|=|\|")
# table-cell attributes the parser kept as text where the wikitext lacks the "|" after them
_ATTRS = re.compile(
    r"\b(?:colspan|rowspan|bgcolor|style|align|width|class|scope|valign|height)"
    r"\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s|]+)\s*\|?",
    re.IGNORECASE,
)
_EMPTY_CELLS = re.compile(r"^(?:\s*\|)+\s*|(?:\s*\|)+\s*$|(?<=\|)(?:\s*\|)+")
# markup the parser left as text (e.g. a <ref> it could not close because of stray '')
_LEFT_REF = re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?(</ref>|$)", re.IGNORECASE)
_LEFT_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?>")


class _Buf:
    """Output pieces with a running length, so a link knows where its anchor sits."""

    __slots__ = ("pieces", "pos", "record")

    def __init__(self, record: bool) -> None:
        self.pieces: list[str] = []
        self.pos = 0
        self.record = record

    def add(self, s: str) -> None:
        if s:
            self.pieces.append(s)
            self.pos += len(s)

    def text(self) -> str:
        return "".join(self.pieces)


@dataclass
class _Slot:
    """A link waiting for its sentence, resolved once its buffer is complete."""

    buf: _Buf
    start: int
    end: int
    target: str
    anchor: str
    field: str = ""


@dataclass
class _State:
    sections: list[tuple[str, int, _Buf]] = field(default_factory=list)
    slots: list[_Slot] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    citations: list = field(default_factory=list)
    infobox: Infobox | None = None
    field_bufs: dict[int, tuple[str, _Buf]] = field(default_factory=dict)


def clean_line(s: str) -> str:
    """Whitespace and leftover punctuation of removed markup, tidied on one line."""
    s = " ".join(s.split())
    if not _NEEDS_TIDY.search(s):
        return s
    if "&" in s:  # entities escaped twice in the dump survive the parser as text
        s = decode_references(s).replace("\u00a0", " ")
    if "<" in s:
        s = _LEFT_TAG.sub("", _LEFT_REF.sub("", s))
    if "=" in s:
        s = _ATTRS.sub("", s)
    if "|" in s:
        s = _EMPTY_CELLS.sub("", s)
    if "'" in s:
        s = _QUOTES.sub("", s)
    if "(" in s or "[" in s:
        s = _EMPTY_PARENS.sub("", s)
        s = _PAREN_LEAD.sub("(", s)
        s = _OPEN_SPACE.sub(r"\1", s)
    if "__" in s:
        s = _MAGIC.sub("", s)
    s = _SPACE_PUNCT.sub(r"\1", s)
    s = _DOUBLE_PUNCT.sub(r"\1", s)
    return " ".join(s.split())


def clean_block(raw: str) -> str:
    lines = (clean_line(x) for x in raw.split("\n"))
    return "\n".join(x for x in lines if x and not _NOISE_LINE.match(x))


def first_sentence(text: str) -> str:
    m = _SENT_END.search(text)
    return text[: m.start()].strip() if m else text.strip()


class _Renderer:
    """Walks the node tree once, writing section text and collecting the page's parts."""

    def __init__(self) -> None:
        self.st = _State()
        self.st.sections.append(("", 0, _Buf(True)))
        self.field = ""
        self.in_ref = 0
        self.in_cell = 0

    # --- nodes -------------------------------------------------------------------------
    def walk(self, nodes, buf: _Buf) -> None:
        for node in nodes:
            t = type(node)
            if t is Text:
                buf.add(node.value)
            elif t is Wikilink:
                self.link(node, buf)
            elif t is Template:
                self.template(node, buf)
            elif t is Tag:
                self.tag(node, buf)
            elif t is HTMLEntity:
                buf.add(node.normalize())
            elif t is Heading:
                title = self.clean(node.title)
                if buf is self.st.sections[-1][2] and not self.in_cell:
                    self.st.sections.append((title, node.level, _Buf(True)))
                    buf = self.st.sections[-1][2]
                else:
                    buf.add("\n" + title + "\n")
            elif t is ExternalLink and node.title is not None:
                self.walk(node.title.nodes, buf)
            # comments, template arguments ({{{x}}}) and bare external links show nothing

    def clean(self, code) -> str:
        nodes = code.nodes
        if len(nodes) == 1 and type(nodes[0]) is Text:
            return clean_line(nodes[0].value)
        buf = _Buf(False)
        self.walk(code.nodes, buf)
        return clean_line(buf.text().replace("\n", " "))

    def link(self, node: Wikilink, buf: _Buf) -> None:
        title = str(node.title).strip()
        colon = title.startswith(":")
        if colon:
            title = title[1:].strip()
        if ":" in title:
            prefix = title.split(":", 1)[0].strip().lower()
            if prefix in CATEGORY_NS:
                if not colon:
                    name = normalize_title(title.split(":", 1)[1])
                    if name:
                        self.st.categories.append(name)
                    return
            elif prefix in FILE_NS:
                if not colon:
                    return
            elif prefix in OTHER_NS or _LANG.match(prefix):
                if not colon and _LANG.match(prefix) and prefix not in OTHER_NS:
                    return  # interlanguage link
                if node.text is not None:
                    self.walk(node.text.nodes, buf)
                else:
                    buf.add(title.split(":", 1)[1])
                return
        start, n = buf.pos, len(buf.pieces)
        if node.text is not None:
            self.walk(node.text.nodes, buf)
        else:
            buf.add(title.split("#", 1)[0] if not title.startswith("#") else title[1:])
        target = normalize_title(title)
        if buf.record and target and not self.in_ref:
            anchor = clean_line("".join(buf.pieces[n:]))
            self.st.slots.append(_Slot(buf, start, buf.pos, target, anchor or target, self.field))

    def template(self, tpl: Template, buf: _Buf) -> None:
        name = template_name(tpl)
        if is_citation(name):
            c = citation_of(tpl, self.clean)
            if c is not None:
                self.st.citations.append(c)
        elif is_infobox(name):
            if self.st.infobox is None and buf.record and not self.field:
                self.infobox(tpl, name)
        else:
            buf.add(render_inline(tpl, name, self.clean))

    def infobox(self, tpl: Template, name: str) -> None:
        fields: list[tuple[str, str]] = []
        for p in tpl.params:
            key = str(p.name).strip()
            if not p.showkey or not key:
                continue
            fb = _Buf(True)
            self.field = key
            first_slot = len(self.st.slots)
            self.walk(p.value.nodes, fb)
            self.field = ""
            value = clean_line(fb.text().replace("\n", " ")).strip(" ,;")
            if value and not _NOISE_LINE.match(value):
                fields.append((key, value))
            else:
                del self.st.slots[first_slot:]
        self.st.infobox = Infobox(type=infobox_type(name), fields=tuple(fields))

    def tag(self, node: Tag, buf: _Buf) -> None:
        tag = str(node.tag).lower()
        if tag == "ref":
            if node.contents is not None:
                self.in_ref += 1
                self.walk(node.contents.nodes, _Buf(False))
                self.in_ref -= 1
        elif tag == "table":
            self.table(node, buf)
        elif tag in ("li", "dt", "br") and (self.field or self.in_cell):
            buf.add(", ")  # items of an infobox value or a table cell stay on one line
        elif tag in ("li", "dt"):
            buf.add("\n")
        elif tag == "dd":
            buf.add("\n" if not buf.pieces or buf.pieces[-1].endswith("\n") else ": ")
        elif tag in ("br", "hr"):
            buf.add("\n" if tag == "hr" else " ")
        elif tag in _DROP_TAGS:
            return
        elif node.contents is not None:
            self.walk(node.contents.nodes, buf)
            if tag in ("p", "div", "blockquote", "poem", "pre", "center"):
                buf.add("\n")

    def table(self, node: Tag, buf: _Buf) -> None:
        """A table as lines: its caption, then one line per row, cells joined by " | "."""
        if node.contents is None:
            return
        buf.add("\n")
        for child in node.contents.nodes:
            if type(child) is Tag and str(child.tag).lower() == "tr":
                self.row(child, buf)
            elif type(child) is Tag and str(child.tag).lower() in ("td", "th"):
                self.row_cells([child], buf)
            elif type(child) is Text and "|+" in child.value:
                buf.add("\n" + child.value.split("|+", 1)[1] + "\n")
        buf.add("\n")

    def row(self, tr: Tag, buf: _Buf) -> None:
        if tr.contents is not None:
            cells = [
                c
                for c in tr.contents.nodes
                if type(c) is Tag and str(c.tag).lower() in ("td", "th")
            ]
            self.row_cells(cells, buf)

    def row_cells(self, cells: list[Tag], buf: _Buf) -> None:
        buf.add("\n")
        sep = ""
        for cell in cells:
            if cell.contents is None:
                continue
            n, pos, nslots = len(buf.pieces), buf.pos, len(self.st.slots)
            buf.add(sep)
            self.in_cell += 1
            self.walk(cell.contents.nodes, buf)
            self.in_cell -= 1
            added = "".join(buf.pieces[n:])
            if not added.strip(" \n|-–—") or _NOISE_LINE.match(added):
                del buf.pieces[n:]
                buf.pos = pos
                del self.st.slots[nslots:]
                continue
            # a cell stays on its row's line: same length, so link offsets hold
            for i in range(n, len(buf.pieces)):
                if "\n" in buf.pieces[i]:
                    buf.pieces[i] = buf.pieces[i].replace("\n", " ")
            sep = " | "
        buf.add("\n")

    # --- result ------------------------------------------------------------------------
    def page(self, page_id: int, title: str) -> Page:
        st = self.st
        raws = {id(b): b.text() for _, _, b in st.sections}
        bounds: dict[int, list[int]] = {}
        links: list[Link] = []
        sentences: dict[tuple[int, int, int], str] = {}
        for s in st.slots:
            raw = raws.get(id(s.buf))
            if raw is None:  # an infobox field: its clean value is the sentence
                raw = s.buf.text().replace("\n", " ")  # same length: offsets hold
                raws[id(s.buf)] = raw
            b = bounds.get(id(s.buf))
            if b is None:
                b = bounds[id(s.buf)] = [m.end() for m in _SENT_END.finditer(raw)]
            i = bisect.bisect_right(b, s.start)
            lo = b[i - 1] if i else 0
            j = bisect.bisect_left(b, s.end)
            hi = b[j] if j < len(b) else len(raw)
            key = (id(s.buf), lo, hi)
            sentence = sentences.get(key)
            if sentence is None:
                sentence = sentences[key] = clean_line(raw[lo:hi])
            links.append(Link(s.target, s.anchor, sentence, s.field))
        sections: list[Section] = []
        parts: list[str] = []
        for sec_title, level, buf in st.sections:
            if sec_title.lower() in NON_PROSE_SECTIONS:
                continue
            text = clean_block(raws[id(buf)])
            if not text:
                continue
            sections.append(Section(sec_title, level, text))
            parts.append(f"{sec_title}\n{text}" if sec_title else text)
        lead = sections[0].text if sections and sections[0].level == 0 else ""
        return Page(
            id=page_id,
            title=title,
            text="\n\n".join(parts),
            description=first_sentence(lead.split("\n", 1)[0]) if lead else "",
            sections=tuple(sections),
            links=tuple(links),
            infobox=st.infobox,
            categories=tuple(dict.fromkeys(st.categories)),
            citations=tuple(st.citations),
        )


def parse_wikitext(page_id: int, title: str, wikitext: str) -> Page:
    """Parse one article's wikitext into a `Page` (title normalised, URL derived)."""
    r = _Renderer()
    r.walk(mwparserfromhell.parse(wikitext, skip_style_tags=True).nodes, r.st.sections[0][2])
    return r.page(page_id, normalize_title(title))
