"""Typed facts from infoboxes, categories and leads; kinds; the SQLite fact table."""

from __future__ import annotations

from wikisim.corpus.page import Infobox, Link, Page
from wikisim.synth.attrs import Date, Quantity, life_dates, parse_date, parse_quantity
from wikisim.synth.english import ATTRIBUTES as PHRASED_ATTRIBUTES
from wikisim.synth.english import RELATIONS as PHRASES
from wikisim.synth.english import negate
from wikisim.synth.factdb import FactDB, ListSource, build_facts
from wikisim.synth.facts import (
    ATTRIBUTES,
    FIELD_RELATION,
    RANGE,
    RELATIONS,
    field_key,
    fits,
    name_candidates,
    page_facts,
)
from wikisim.synth.kinds import (
    LISTING,
    PERSON,
    PLACE,
    TIME,
    WORK,
    answer_noun,
    page_kind,
    title_kind,
)


def test_values_are_parsed_into_dates_and_quantities():
    assert parse_date("born 3 May 1881 in Oldtown") == Date(1881, 5, 3)
    assert parse_date("June 12, 1875") == Date(1875, 6, 12)
    assert parse_date("384 BC") == Date(-384)
    assert parse_quantity("1.5 million") == Quantity(1_500_000.0, "")
    assert life_dates("Anna (3 May 1881 – 1950) was") == {
        "birth_date": Date(1881, 5, 3),
        "death_date": Date(1950),
    }


def test_infobox_field_variants_map_to_one_relation():
    for name in ("birth_place", "birthplace", "place_of_birth", "Place of birth"):
        assert FIELD_RELATION[field_key(name)] == "born_in"
    assert (
        field_key("predecessor1") == "predecessor"
        and FIELD_RELATION["predecessor"] == "predecessor"
    )
    assert fits("born_in", PERSON, PLACE) and not fits("born_in", PLACE, PERSON)


def test_person_facts_have_evidence_and_no_layout_fields(pages):
    anna = page_facts(pages[0])
    assert anna.kind == PERSON
    born = next(r for r in anna.rels if r.relation == "born_in" and r.source == "infobox")
    assert born.obj == ("Oldtown",) and born.evidence == "infobox birth_place: Oldtown"
    assert any(
        r.relation == "from" and r.obj == ("Riverside",) and r.source == "category"
        for r in anna.rels
    )
    assert any(
        r.relation == "born_in" and r.source == "lead" and r.evidence == "Anna was born in Oldtown."
        for r in anna.rels
    )
    attrs = {a.attr: a for a in anna.attrs}
    assert (attrs["birth_date"].year, attrs["birth_date"].month) == (1881, 5)
    assert set(attrs) == {"birth_date", "death_date"}  # "image" is layout, never a fact


def test_place_attributes_keep_units_and_skip_metadata(pages):
    oldtown = page_facts(pages[5])
    attrs = {a.attr: a for a in oldtown.attrs}
    assert (
        oldtown.kind == PLACE
        and attrs["population"].value == 45000
        and attrs["population"].unit == "people"
    )
    assert attrs["founded"].year == 1720
    assert set(attrs) == {
        "population",
        "founded",
    }  # the census year and the map caption are not facts


def test_lead_patterns_and_categories_give_relations_and_kinds(pages):
    painting = page_facts(pages[8])
    assert painting.kind == WORK
    assert [(r.relation, r.obj) for r in painting.rels] == [("creator", ("Anna Berg",))]
    assert {a.attr: a.year for a in painting.attrs} == {"released": 1910}
    lincoln = Page(
        1,
        "Abe Lincoln",
        "Abe Lincoln was an American lawyer from Hodgenville, Kentucky. His father was "
        "born in Virginia. Lincoln lived in Illinois from 1809.",
        categories=("1809 births", "People from Hodgenville, Kentucky", "Illinois lawyers"),
    )
    facts = page_facts(lincoln)
    assert facts.kind == PERSON
    assert [(r.relation, r.obj) for r in facts.rels] == [
        ("from", ("Hodgenville, Kentucky",))
    ]  # not the father's
    assert {a.attr: a.year for a in facts.attrs} == {"birth_date": 1809}
    assert name_candidates("Warren County, Iowa, United States") == (
        "Warren County, Iowa",
        "Warren County",
    )
    assert name_candidates("Hodgenville, Kentucky, Ohio") == (
        "Hodgenville, Kentucky, Ohio",
        "Hodgenville, Kentucky",
        "Hodgenville",
    )
    assert name_candidates("July of") == () and name_candidates("Ulysses F.") == ()


def test_link_markup_is_not_needed_for_typed_facts():
    # a WikiExtractor-style page: no links, no infobox; the lead still says who directed it
    film = Page(
        7, "Blue Sky (film)", "Blue Sky is a 1994 American film directed by Tony Richardson."
    )
    facts = page_facts(film)
    assert facts.kind == WORK
    assert [(r.relation, r.obj, r.need_page) for r in facts.rels] == [
        ("director", ("Tony Richardson",), False)
    ]
    assert {a.attr: a.year for a in facts.attrs} == {"released": 1994}
    song = Page(
        8,
        "X",
        "X is a song by Yoyo.",
        infobox=Infobox("song", (("artist", "Yoyo"), ("label", "Zed"))),
        links=(Link("Yoyo", "Yoyo", "", "artist"), Link("Zed", "Zed", "", "label")),
    )
    # "Zed" is only in the infobox: a reader of the page could not check it, so it is no fact
    assert [(r.relation, r.obj) for r in page_facts(song).rels] == [("artist", ("Yoyo",))]


def test_an_agent_named_after_a_descriptor_is_the_later_name():
    """ "by Hong Kong pop singer Charlene Choi" names Charlene Choi, not Hong Kong (it had made
    Hong Kong the artist, and a question asked for "the person who recorded" it)."""
    leads = {
        "Another Me": "Another Me is the first EP by Hong Kong pop singer Charlene Choi.",
        "Lucy Crown": "Lucy Crown is a novel by American author Irwin Shaw.",
        "Barn Jams": "Barn Jams is a song written by Pink Floyd guitarist, David Gilmour.",
        "The Scream": "The Scream is a 1893 painting created by Norwegian artist Edvard Munch.",
        "Queen II": "Queen II is the second studio album by the British rock band Queen.",
        "Blue Sky": "Blue Sky is a 1994 American film directed by Tony Richardson.",
    }
    found = {
        title: [(r.relation, r.obj) for r in page_facts(Page(i, title, lead)).rels]
        for i, (title, lead) in enumerate(leads.items())
    }
    assert found == {
        "Another Me": [("artist", ("Charlene Choi",))],
        "Lucy Crown": [("author", ("Irwin Shaw",))],
        "Barn Jams": [("author", ("David Gilmour",))],
        "The Scream": [("creator", ("Edvard Munch",))],
        "Queen II": [("artist", ("Queen",))],
        "Blue Sky": [("director", ("Tony Richardson",))],
    }


def test_a_law_named_without_a_page_is_no_person(tmp_path):
    """ "created by the Federal Judiciary Act" had asked for "the person who created" a court."""
    court = Page(
        1,
        "District of Ohio",
        "The District of Ohio was a federal judicial district of the United States created by "
        "the Federal Judiciary Act of 1801.",
    )
    show = Page(2, "Blue Sky", "Blue Sky is a 1994 American film created by Tony Richardson.")
    db = build_facts(ListSource((court, show), ()), tmp_path / "facts.sqlite")
    act = db.by_title("Federal Judiciary Act of 1801") or db.by_title("Federal Judiciary Act")
    tony = db.by_title("Tony Richardson")
    assert act is not None and act.kind != PERSON
    assert tony is not None and tony.kind == PERSON


def test_a_lead_number_is_the_pages_only_when_said_of_it():
    from wikisim.synth.facts import text_attrs

    lead = (
        "Tennessee is a U.S. state located in the Southeastern United States. Tennessee's "
        "capital is Nashville, which has a population of 601,222. Memphis is the state's largest "
        "city, with a population of 653,450.\nIt has an area of 109,247 square kilometres."
    )
    attrs = {a.attr: a.value for a in text_attrs(Page(1, "Tennessee", lead), PLACE)}
    assert attrs == {"area": 109247.0}  # neither Nashville's nor Memphis's population
    young = Page(
        2, "Young, New South Wales", "At the 2011 census, Young had a population of 6,960."
    )
    assert [(a.attr, a.value) for a in text_attrs(young, PLACE)] == [("population", 6960.0)]


def test_months_years_lists_languages_are_not_answer_kinds():
    assert (
        title_kind("May") == TIME
        and title_kind("1945") == TIME
        and title_kind("19th century") == TIME
    )
    assert title_kind("List of painters") == LISTING and title_kind("Dutch") is not None
    assert title_kind("English language") == "language" and title_kind("Oldtown") is None
    assert page_kind("Darwin", "", (), "", "Darwin may refer to:", False) == LISTING
    assert (
        page_kind("X", "military conflict", (), "", "", False) == "event"
    )  # the head noun decides
    assert (
        answer_noun(PLACE, "settlement") == "place" and answer_noun(PLACE, "market town") == "town"
    )


def test_fact_table_resolves_titles_and_keeps_evidence(world: FactDB):
    assert world.entity(1).kind == PERSON and world.entity(1).answerable
    assert (
        world.entity(30).kind == TIME and not world.entity(30).answerable
    )  # "May": a month, never an answer
    assert world.objects(1, "born_in") == {10} and world.subjects("born_in", 10) == {1, 2}
    row = world.fact(1, "born_in", 10)
    assert row.url.endswith("/Anna_Berg") and row.source == "infobox"
    assert world.objects(1, "from") == {12}
    assert world.aliases("Oldtown") == ["Old Town"]
    assert world.attrs(10)["population"].value == 45000
    assert world.relations(1, 10) == [("born_in", "out")]
    assert 20 in world.adj(1) and all(30 not in world.adj(n) for n in range(1, 21))
    counts = world.counts()
    assert counts["page_entities"] == 10 and counts["relations"] == 7 and counts["walk_nodes"] == 9


def test_every_relation_reads_as_english_and_negates():
    assert set(RELATIONS) | set(RANGE) <= set(PHRASES) | {"influenced", "child", "successor"}
    assert set(ATTRIBUTES) <= set(PHRASED_ATTRIBUTES)
    for fwd, inv in PHRASES.values():
        for template in (*fwd, *inv):
            assert " not " in negate(template)
