"""How a title reads as a name: without its disambiguating parenthesis."""

from __future__ import annotations

import re

_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


def display_name(title: str) -> str:
    """ "Mercury (planet)" -> "Mercury"."""
    return _PAREN.sub("", title).strip() or title


def initials(title: str) -> str:
    """ "Johann Sebastian Bach" -> "J. S. B."."""
    return " ".join(w[0].upper() + "." for w in display_name(title).split() if w[:1].isalnum())
