"""Values from text: dates (day-month-year, month-day-year, ISO, year, BC) and leading quantities.

Why: temporal fuzzing, numeric ranges and comparisons need real values, not strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_RE = (
    "|".join(m.capitalize() for m in MONTHS) + "|" + "|".join(m[:3].capitalize() for m in MONTHS)
)
_DMY = re.compile(rf"\b(\d{{1,2}}) ({_MONTH_RE})\.? (\d{{3,4}})\b")
_MDY = re.compile(rf"\b({_MONTH_RE})\.? (\d{{1,2}}),? (\d{{3,4}})\b")
_MY = re.compile(rf"\b({_MONTH_RE}) (\d{{3,4}})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-2][0-9])\b")
_BC = re.compile(r"\b(\d{1,4})\s*(?:BC|BCE|B\.C\.)")
_NUMBER = re.compile(
    r"^\s*(?:approx\.?|about|c\.|ca\.|~)?\s*\$?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(million|billion|thousand)?\s*([A-Za-z%²$/][A-Za-z0-9%²/ .]{0,14})?"
)
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_LIFE = re.compile(r"\(\s*(?:born\s+)?([^()]*?\d{3,4})(?:\s*[–-]\s*([^()]*?\d{3,4}))?\s*\)")


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
