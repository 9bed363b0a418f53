"""Typed attribute values: infobox strings parsed into dates, numbers with units and kinds.

Why: temporal fuzzing, numeric ranges and comparisons need real values, not strings, and
the coarse entity kind (person, place, ...) labels nodes for Weisfeiler-Leman hashing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
_MONTH_RE = "|".join(m.capitalize() for m in MONTHS) + "|" + "|".join(m[:3].capitalize() for m in MONTHS)
_DMY = re.compile(rf"\b(\d{{1,2}}) ({_MONTH_RE})\.? (\d{{3,4}})\b")
_MDY = re.compile(rf"\b({_MONTH_RE})\.? (\d{{1,2}}),? (\d{{3,4}})\b")
_MY = re.compile(rf"\b({_MONTH_RE}) (\d{{3,4}})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-2][0-9])\b")
_BC = re.compile(r"\b(\d{1,4})\s*(?:BC|BCE|B\.C\.)")
_SKIP_FIELD = re.compile(
    r"image|caption|width|size|alt|map|flag|seal|coat|logo|signature|name|footnote|website|url|"
    r"(?:^|_)id$|code|icd|omim|medline|emedicine|mesh|diseasesdb|pushpin|coord|latd|longd|lat_|long_|"
    r"blank|color|colour|symbol|style|label|align|module|embed|ref|note|imagesize|px"
)
_FILE = re.compile(r"\.(?:jpe?g|png|svg|gif|tiff?|ogg)\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"^\s*(?:approx\.?|about|c\.|ca\.|~)?\s*\$?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(million|billion|thousand)?\s*([A-Za-z%²$/][A-Za-z0-9%²/ .]{0,14})?"
)
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_DATE_FIELDS = re.compile(r"date|born|died|birth|death|founded|established|formed|released|opened|year|start|end")
_LIFE = re.compile(r"\(\s*(?:born\s+)?([^()]*?\d{3,4})(?:\s*[–-]\s*([^()]*?\d{3,4}))?\s*\)")

KINDS = ("person", "place", "organisation", "work", "event", "topic")
_KIND_WORDS: dict[str, tuple[str, ...]] = {
    "person": ("person", "officeholder", "artist", "scientist", "writer", "actor", "philosopher",
               "royalty", "biography", "sportsperson", "politician", "president", "monarch",
               "musician", "singer", "composer", "painter", "poet", "novelist", "saint", "general"),
    "place": ("settlement", "country", "city", "town", "village", "island", "river", "mountain",
              "state", "region", "county", "province", "lake", "sea", "capital", "continent",
              "municipality", "district", "territory", "ocean", "peninsula", "protected area"),
    "organisation": ("company", "organization", "organisation", "university", "band", "party",
                     "club", "school", "agency", "institution", "team", "corporation", "church"),
    "work": ("film", "album", "book", "song", "novel", "television", "video game", "single",
             "series", "play", "opera", "painting", "language", "software", "magazine"),
    "event": ("war", "battle", "election", "conflict", "event", "festival", "revolution",
              "treaty", "disaster", "olympics", "championship"),
}


@dataclass(frozen=True, order=True)
class Date:
    year: int
    month: int = 0  # 0 when unknown
    day: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.month <= 12 and 0 <= self.day <= 31):
            raise ValueError(f"bad date {self.year}-{self.month}-{self.day}")

    def iso(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str = ""


def _month(name: str) -> int:
    return next(i + 1 for i, m in enumerate(MONTHS) if m.startswith(name.lower()[:3]))


def parse_date(text: str) -> Date | None:
    """The first full or partial date in `text` (day-month-year, month-day-year, ISO, year, BC)."""
    bc = _BC.search(text)
    if bc:
        return Date(-int(bc.group(1)))
    for rx, order in ((_ISO, "ymd"), (_DMY, "dmy"), (_MDY, "mdy")):
        m = rx.search(text)
        if m:
            g = m.groups()
            if order == "ymd":
                y, mo, d = int(g[0]), int(g[1]), int(g[2])
            elif order == "dmy":
                y, mo, d = int(g[2]), _month(g[1]), int(g[0])
            else:
                y, mo, d = int(g[2]), _month(g[0]), int(g[1])
            if 1 <= mo <= 12 and 1 <= d <= 31:
                return Date(y, mo, d)
    m = _MY.search(text)
    if m:
        return Date(int(m.group(2)), _month(m.group(1)))
    m = _YEAR.search(text)
    return Date(int(m.group(1))) if m else None


def parse_quantity(text: str) -> Quantity | None:
    """A leading number with optional scale word and unit ("40,000", "1.2 million", "35 km2")."""
    m = _NUMBER.match(text)
    if not m:
        return None
    value = float(m.group(1).replace(",", "")) * _SCALE.get(m.group(2) or "", 1.0)
    unit = (m.group(3) or "").strip().split(" (")[0].strip(" .")
    return Quantity(value, unit[:12])


def field_kind(name: str, value: str) -> tuple[str, Date | Quantity | str] | None:
    """Classify one unlinked infobox value as ("date"|"number"|"string", parsed) or None."""
    value = value.strip()
    if not value or len(value) > 80 or _SKIP_FIELD.search(name.lower()) or _FILE.search(value):
        return None
    if _DATE_FIELDS.search(name):
        d = parse_date(value)
        if d is not None:
            return "date", d
    q = parse_quantity(value)
    if q is not None and not _YEAR.fullmatch(value.strip()):
        return "number", q
    if len(value.split()) <= 6 and any(c.isalpha() for c in value):
        return "string", value
    return None


def life_dates(description: str) -> dict[str, Date]:
    """Birth/death dates from a lead's parenthesis: "X (1 May 1900 – 2 June 1950) was ..."."""
    m = _LIFE.search(description[:300])
    if not m:
        return {}
    out: dict[str, Date] = {}
    born = parse_date(m.group(1))
    if born is not None:
        out["birth_date"] = born
    if m.group(2):
        died = parse_date(m.group(2))
        if died is not None:
            out["death_date"] = died
    return out


_TEXT_NUMBERS = (
    ("population", re.compile(r"\bpopulation (?:of|was|is|was estimated at|of about|of approximately) "
                              r"(?:about |approximately |around |over |nearly )?(\d{1,3}(?:,\d{3})+|\d{4,})")),
    ("area", re.compile(r"\barea of (?:about |approximately )?(\d[\d,.]*) ?(km2|km²|square kilometres|"
                        r"square kilometers|square miles|sq mi)")),
    ("elevation", re.compile(r"\b(?:elevation|height|altitude) of (?:about )?(\d[\d,.]*) ?(m|metres|meters|ft|feet)\b")),
)
_TEXT_DATES = (
    ("founding_date", re.compile(r"\b(?:founded|established|formed|created) (?:in|on) (?:[^.]{0,20}?)(1\d{3}|20[0-2]\d)\b")),
    ("release_date", re.compile(r"\breleased (?:in|on) (?:[^.]{0,20}?)(1\d{3}|20[0-2]\d)\b")),
)


def text_facts(text: str) -> dict[str, Date | Quantity]:
    """Numbers and years stated in a lead ("a population of 40,123", "founded in 1850"):
    the facts a dump without infoboxes (WikiExtractor) still has."""
    head = text[:2000]
    out: dict[str, Date | Quantity] = {}
    for name, rx in _TEXT_NUMBERS:
        m = rx.search(head)
        if m:
            try:
                value = float(m.group(1).replace(",", "").rstrip("."))
            except ValueError:
                continue
            unit = m.group(2) if rx.groups > 1 else ""
            out[name] = Quantity(value, {"km²": "km2", "square kilometres": "km2", "square kilometers": "km2",
                                         "square miles": "sq mi", "metres": "m", "meters": "m",
                                         "feet": "ft"}.get(unit, unit))
    for name, rx in _TEXT_DATES:
        m = rx.search(head)
        if m:
            out[name] = Date(int(m.group(1)))
    return out


_ISA = re.compile(r"\b(?:is|was|are|were)\s+(?:a|an|the|one of the)\s+([^.,;:()]{2,80})")
_STOP = re.compile(r"\s(?:of|in|on|that|which|who|whose|from|for|by|with|and|to|at|located|where|based)\s")


def fine_type(description: str, infobox_type: str = "") -> str:
    """A short noun phrase for entity obfuscation: infobox type, else "is a ___" from the lead."""
    infobox_type = re.sub(r"<!--.*?(-->|$)", "", infobox_type, flags=re.S).strip()
    if infobox_type and "box" not in infobox_type.lower():
        return infobox_type.lower()
    m = _ISA.search(description)
    if not m:
        return ""
    phrase = _STOP.split(" " + m.group(1) + " ", maxsplit=1)[0].strip()
    words = phrase.split()[-3:]
    return " ".join(words).lower() if words else ""


def coarse_kind(fine: str, description: str, has_life_dates: bool, fields: tuple[str, ...] = ()) -> str:
    """One of KINDS, from infobox fields, life dates and keywords (ordered by reliability)."""
    if has_life_dates or any(f in ("birth_date", "birth_place", "death_date") for f in fields):
        return "person"
    for kind, words in _KIND_WORDS.items():
        if any(re.search(rf"\b{w}s?\b", fine) for w in words):
            return kind
    head = description[:200].lower()
    for kind, words in _KIND_WORDS.items():
        if any(re.search(rf"\b(?:is|was) (?:a|an|the) (?:\w+ ){{0,3}}{w}\b", head) for w in words):
            return kind
    return "topic"
