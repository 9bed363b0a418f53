from __future__ import annotations

from wikisim.synth.attrs import (
    Date,
    Quantity,
    field_kind,
    life_dates,
    parse_date,
    parse_quantity,
    text_facts,
)
from wikisim.synth.graph import MENTIONS, KnowledgeGraph


def test_values_are_parsed_into_dates_and_quantities():
    assert parse_date("born 3 May 1881 in Oldtown") == Date(1881, 5, 3)
    assert parse_date("June 12, 1875") == Date(1875, 6, 12)
    assert parse_date("384 BC") == Date(-384)
    assert parse_quantity("1.5 million") == Quantity(1_500_000.0, "")
    assert parse_quantity("35 km2") == Quantity(35.0, "km2")
    assert field_kind("image", "Flag.svg") is None
    assert field_kind("population_total", "45,000") == ("number", Quantity(45000.0, ""))
    assert life_dates("Anna (3 May 1881 – 1950) was") == {"birth_date": Date(1881, 5, 3), "death_date": Date(1950)}
    lead = "Oldtown is a town with a population of 45,123 and an area of 12.5 km2. It was founded in 1720."
    assert text_facts(lead) == {"population": Quantity(45123.0, ""), "area": Quantity(12.5, "km2"),
                                "founding_date": Date(1720)}


def test_graph_has_typed_entities_relations_evidence_and_aliases(world: KnowledgeGraph):
    anna = world.entities[1]
    assert anna.kind == "person" and anna.attr("birth_date").date == Date(1881, 5, 3)
    assert anna.attr("years_lived").quantity == Quantity(69.0, "years")  # from the lead's life dates
    assert world.entities[10].kind == "place" and world.entities[10].attr("population_total").quantity.value == 45000
    edge = world.relations(1, 10)["birth_place"]
    assert edge.sentence == "Anna Berg was born in Oldtown." and edge.url.endswith("/Anna_Berg")
    assert MENTIONS not in world.relations(1, 10)  # the typed relation replaced the plain link
    assert world.resolve("Old Town") == 10 and "Old Town" in world.aliases[10]
    assert world.popularity[10] == 2 and world.stats(10)["in_degree"] == 2


def test_densify_adds_title_mentions_from_unlinked_text(world: KnowledgeGraph):
    # page 20 has no link markup: its edges come only from title mentions in its text
    assert world.successors(20) == {1, 11, 12}
    assert world.relations(20, 1)[MENTIONS].origin == "mention"
