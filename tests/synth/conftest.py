"""A small hand-built world: people, places and works with dates, numbers and typed links."""

from __future__ import annotations

import pytest

from wikisim.corpus.page import Infobox, Link, Page, Redirect
from wikisim.synth.densify import densify
from wikisim.synth.graph import KnowledgeGraph, build_graph


def person(pid: int, name: str, born: str, place: str, links: tuple[str, ...] = ()) -> Page:
    text = f"{name} ({born} – 1950) was a painter. {name} was born in {place}."
    return Page(
        pid, name, text, description=text.split(". ")[0] + ".",
        links=(Link(place, place, f"{name} was born in {place}.", "birth_place"),
               *(Link(t, t, f"{name} knew {t}.") for t in links)),
        infobox=Infobox("artist", (("birth_date", born), ("birth_place", place))),
    )


def place(pid: int, name: str, population: str, links: tuple[str, ...] = ()) -> Page:
    text = f"{name} is a town in Freedonia. It has {population} people."
    return Page(
        pid, name, text, description=text.split(". ")[0] + ".",
        links=tuple(Link(t, t, f"{name} is near {t}.") for t in links),
        infobox=Infobox("settlement", (("population_total", population), ("established", "1720"))),
    )


def world_pages() -> list[Page]:
    return [
        person(1, "Anna Berg", "3 May 1881", "Oldtown", ("Carl Dorn",)),
        person(2, "Carl Dorn", "12 June 1875", "Oldtown", ("Eva Fink",)),
        person(3, "Eva Fink", "1 January 1902", "Newport", ()),
        person(4, "Gus Hale", "9 September 1866", "Newport", ("Anna Berg",)),
        person(5, "Ida Jung", "4 April 1890", "Riverside", ("Gus Hale",)),
        place(10, "Oldtown", "45,000", ("Newport",)),
        place(11, "Newport", "12,500", ("Riverside",)),
        place(12, "Riverside", "3,100", ()),
        Page(20, "The Blue Hour", "The Blue Hour is a painting by Anna Berg, shown in Riverside and Newport.",
             description="The Blue Hour is a painting by Anna Berg, shown in Riverside and Newport."),
    ]


def world_redirects() -> list[Redirect]:
    return [Redirect("Old Town", "Oldtown")]


@pytest.fixture()
def world() -> KnowledgeGraph:
    pages = world_pages()
    kg = build_graph(pages, world_redirects())
    densify(kg, pages)
    return kg
