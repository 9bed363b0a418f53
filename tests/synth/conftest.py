"""A small hand-built world: people, places and a work with dates, numbers, typed facts and links."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikisim.corpus.page import Infobox, Link, Page, Redirect
from wikisim.synth.factdb import FactDB, ListSource, build_facts


def person(
    pid: int,
    name: str,
    born: str,
    place: str,
    links: tuple[str, ...] = (),
    cats: tuple[str, ...] = (),
) -> Page:
    text = f"{name} ({born} – 1950) was a painter. {name.split()[0]} was born in {place}. "
    text += " ".join(f"{name.split()[0]} knew {t}." for t in links)
    text += " ".join(
        f" {name.split()[0]} lived in {c.removeprefix('People from ')}."
        for c in cats
        if "from" in c
    )
    return Page(
        pid,
        name,
        text,
        description=text.split(". ")[0] + ".",
        links=(
            Link(place, place, f"{name} was born in {place}.", "birth_place"),
            *(Link(t, t, f"{name} knew {t}.") for t in links),
        ),
        infobox=Infobox(
            "artist", (("image", "Portrait.jpg"), ("birth_date", born), ("birth_place", place))
        ),
        categories=cats,
    )


def place(pid: int, name: str, population: str, links: tuple[str, ...] = ()) -> Page:
    text = f"{name} is a town in Freedonia, founded in 1720. It has {population} people."
    return Page(
        pid,
        name,
        text,
        description=text.split(". ")[0] + ".",
        links=tuple(Link(t, t, f"{name} is near {t}.") for t in links),
        infobox=Infobox(
            "settlement",
            (
                ("population_total", population),
                ("population_as_of", "2011"),
                ("established_date", "1720"),
                ("map_caption", "Location of the town"),
            ),
        ),
    )


def world_pages() -> list[Page]:
    return [
        person(
            1,
            "Anna Berg",
            "3 May 1881",
            "Oldtown",
            ("Carl Dorn", "The Blue Hour"),
            ("People from Riverside",),
        ),
        person(2, "Carl Dorn", "12 June 1875", "Oldtown", ("Eva Fink",)),
        person(3, "Eva Fink", "1 January 1902", "Newport", ("Oldtown",)),
        person(4, "Gus Hale", "9 September 1866", "Newport", ("Anna Berg",)),
        person(5, "Ida Jung", "4 April 1890", "Riverside", ("Gus Hale",), ("1890 births",)),
        place(10, "Oldtown", "45,000", ("Newport",)),
        place(11, "Newport", "12,500", ("Riverside",)),
        place(12, "Riverside", "3,100", ()),
        Page(
            20,
            "The Blue Hour",
            "The Blue Hour is a 1910 painting by Anna Berg, shown in Riverside and Newport.",
            description="The Blue Hour is a 1910 painting by Anna Berg, shown in Riverside and Newport.",
            categories=("Paintings of towns",),
        ),
        Page(
            30,
            "May",
            "May is the fifth month of the year.",
            description="May is the fifth month of the year.",
        ),
    ]


def world_redirects() -> list[Redirect]:
    return [Redirect("Old Town", "Oldtown")]


@pytest.fixture()
def world(tmp_path: Path) -> FactDB:
    return build_facts(
        ListSource(tuple(world_pages()), tuple(world_redirects())), tmp_path / "world.sqlite"
    )


@pytest.fixture()
def pages() -> list[Page]:
    return world_pages()
