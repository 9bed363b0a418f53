"""What a template contributes to a page: a citation, an infobox, a few words, or nothing.

Most templates are navigation or maintenance noise and render to nothing; the few
that carry words a reader sees (``{{convert}}``, ``{{lang}}``, ``{{nowrap}}``...) render
to those words, so the clean text reads like the article.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mwparserfromhell.nodes import Template

from wikisim.corpus.page import Citation

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_VENUE_KEYS = (
    "journal",
    "work",
    "website",
    "newspaper",
    "magazine",
    "periodical",
    "encyclopedia",
    "publisher",
    "series",
    "conference",
)
_CITE_NAMES = ("cite", "citation", "vcite", "vancite")

# templates that show their first/last positional argument as plain words
_SHOW_FIRST = frozenset(
    {
        "nowrap",
        "nobr",
        "small",
        "smaller",
        "big",
        "larger",
        "nowrap begin",
        "j",
        "nobold",
        "noitalic",
        "lang-rtl",
        "transl",
        "em",
        "strong",
        "sic",
        "abbr",
        "keypress",
        "mvar",
        "math",
        "var",
        "code",
        "not a typo",
        "as written",
        "tooltip",
        "hover title",
        "nihongo2",
        "nihongo",
        "ill",
        "interlanguage link",
        "interlanguage link multi",
        "ship",
        "sclass",
        "lang-x",
        "snd",
        "visible anchor",
        "vanchor",
        "anchor text",
        "lcfirst",
        "ucfirst",
        "uc",
        "lc",
        "center",
        "centre",
        "resize",
        "highlight",
        "angle bracket",
        "bracket",
        "linktext",
        "wikt",
        "wiktionary",
        "nastaliq",
        "script",
        "unicode",
        "polytonic",
        "iast",
        "transliteration",
        "ipa",
        "ipa-all",
        "audio",
        "nbsp",
        "dr",
        "lang2",
    }
)
_SHOW_LAST = frozenset({"lang", "langx", "native name", "native phrase", "script/arabic"})
_PUNCT = {
    "snd": " – ",
    "ndash": "–",
    "mdash": "—",
    "spaced ndash": " – ",
    "-": "",
    "•": " • ",
    "middot": "·",
    "dot": "·",
    "nbsp": " ",
    "sp": " ",
    "'": "'",
    "''": '"',
    "!": "|",
    "=": "=",
    "shy": "",
    "zwsp": "",
    "'s": "'s",
    "thinsp": " ",
    "en dash": "–",
    "em dash": "—",
    "clear": "",
    '-"': "",
    "pipe": "|",
    "colon": ":",
}


def template_name(tpl: Template) -> str:
    """The template's name, lower-cased, underscores as spaces, namespace prefix dropped."""
    name = str(tpl.name).strip().replace("_", " ")
    if ":" in name:
        prefix, _, rest = name.partition(":")
        if prefix.strip().lower() in ("template", "vorlage", "modèle", "plantilla", "predefinição"):
            name = rest
    return " ".join(name.lower().split())


def is_infobox(name: str) -> bool:
    return name.startswith("infobox") or name in ("taxobox", "automatic taxobox", "speciesbox")


def infobox_type(name: str) -> str:
    if name.startswith("infobox"):
        return name[len("infobox") :].strip(" _-:") or "generic"
    return name


def is_citation(name: str) -> bool:
    return name.startswith(_CITE_NAMES)


_CITE_KEYS = frozenset(
    {
        "title",
        "chapter",
        "script-title",
        "trans-title",
        "url",
        "doi",
        "authors",
        "author",
        "people",
        "vauthors",
        "last",
        "first",
        "year",
        "date",
        "publication-date",
        "orig-year",
        *_VENUE_KEYS,
    }
)
# "Howlin P, Goode S, Rutter M": surnames with initials, comma-separated
_VANCOUVER = re.compile(r"^[^,;]+ [A-Z]{1,3}(?:, [^,;]+ [A-Z]{1,3})+(?:, et al\.?)?$")
_NUMBERED = re.compile(r"^(?:author|last|first)[0-9]+$")


def _args(tpl: Template, clean: Callable[[object], str]) -> dict[str, str]:
    """The citation's fields that a `Citation` keeps (access dates, ISBNs... are not cleaned)."""
    out: dict[str, str] = {}
    for p in tpl.params:
        key = str(p.name).strip().lower()
        if key not in out and (key in _CITE_KEYS or _NUMBERED.match(key)):
            # a URL would render as a bare external link, which shows nothing: keep it raw
            value = str(p.value).strip() if key in ("url", "doi") else clean(p.value)
            if value:
                out[key] = value
    return out


def citation_of(tpl: Template, clean: Callable[[object], str]) -> Citation | None:
    """A `Citation` from a `{{cite ...}}` template, or None when it names no title nor URL."""
    a = _args(tpl, clean)
    title = a.get("title") or a.get("chapter") or a.get("script-title") or a.get("trans-title", "")
    url = a.get("url", "")
    doi = a.get("doi", "")
    if not (title or url or doi):
        return None
    authors: list[str] = []
    for key in ("authors", "author", "people", "vauthors"):
        if key in a:
            sep = r"[;,]" if key == "vauthors" or _VANCOUVER.match(a[key]) else r";|\band\b"
            authors.extend(x.strip() for x in re.split(sep, a[key]) if x.strip())
    if "last" in a or "first" in a:
        authors.append(f"{a.get('first', '')} {a.get('last', '')}".strip())
    for i in range(1, 30):
        last, first = a.get(f"last{i}", ""), a.get(f"first{i}", "")
        author = a.get(f"author{i}", "") or f"{first} {last}".strip()
        if not author:
            if i > 1:
                break
            continue
        authors.append(author)
    year_text = (
        a.get("year") or a.get("date") or a.get("publication-date") or a.get("orig-year", "")
    )
    m = _YEAR.search(year_text)
    venue = next((a[k] for k in _VENUE_KEYS if k in a), "")
    return Citation(
        title=title,
        authors=tuple(dict.fromkeys(authors)),
        year=int(m.group(1)) if m else None,
        venue=venue,
        doi=doi,
        url=url,
    )


def render_inline(tpl: Template, name: str, clean: Callable[[object], str]) -> str:
    """The words a reader sees for a content-bearing template, else ""."""
    if name in _PUNCT:
        return _PUNCT[name]
    positional = [p for p in tpl.params if not p.showkey]
    if name == "convert" or name == "cvt":
        if len(positional) >= 2:
            value, unit = clean(positional[0].value), clean(positional[1].value)
            if len(positional) >= 3 and clean(positional[1].value) in ("-", "to", "and", "–"):
                unit = f"{clean(positional[1].value)} {clean(positional[2].value)}"
                if len(positional) >= 4:
                    unit += " " + clean(positional[3].value)
            return f"{value} {unit}"
        return ""
    if name.startswith("lang-") and positional:
        return clean(positional[-1].value)
    if name in _SHOW_LAST and positional:
        return clean(positional[-1].value)
    if name in _SHOW_FIRST and positional:
        return clean(positional[0].value)
    if name in ("circa", "c."):
        return "c. " + clean(positional[0].value) if positional else "c."
    if name in (
        "birth date",
        "death date",
        "birth date and age",
        "death date and age",
        "start date",
        "end date",
        "dts",
        "date",
        "start date and age",
        "film date",
    ):
        nums = [clean(p.value) for p in positional if clean(p.value).isdigit()]
        return "-".join(nums[:3])
    if name in ("sortname",) and len(positional) >= 2:
        return f"{clean(positional[0].value)} {clean(positional[1].value)}"
    if name in ("flag", "flagcountry", "flagicon text", "flagu") and positional:
        return clean(positional[0].value)
    if name in (
        "plainlist",
        "flatlist",
        "unbulleted list",
        "ubl",
        "hlist",
        "bulleted list",
        "plain list",
        "flat list",
        "ublist",
        "collapsible list",
        "cslist",
    ):
        return ", ".join(filter(None, (clean(p.value) for p in positional)))
    return ""
