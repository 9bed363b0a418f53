"""Entity kinds: what sort of thing a page or a fact's object is, and which kinds may be answers.

Why kinds: a question asks for "which person" or "which city", so an answer must be a named
entity of a known kind; months, years, languages, nationalities, list and disambiguation
pages and generic concepts are never answers. A page's kind comes from its infobox type, its
categories and its lead's "is a ..." phrase, in that order of trust; an entity that has no
page of its own takes the kind its relation implies (the object of "born in" is a place).
"""

from __future__ import annotations

import re

from wikisim.synth.attrs import MONTHS

PERSON, PLACE, ORG, WORK, EVENT, SPECIES = (
    "person",
    "place",
    "organisation",
    "work",
    "event",
    "species",
)
ANSWER_KINDS = (PERSON, PLACE, ORG, WORK, EVENT, SPECIES)
CONCEPT, LANGUAGE, TIME, NATIONALITY, LISTING = (
    "concept",
    "language",
    "time",
    "nationality",
    "listing",
)

KIND_WORDS: dict[str, tuple[str, ...]] = {
    PERSON: (
        "person",
        "officeholder",
        "artist",
        "scientist",
        "writer",
        "actor",
        "actress",
        "philosopher",
        "royalty",
        "biography",
        "sportsperson",
        "politician",
        "president",
        "monarch",
        "king",
        "queen",
        "emperor",
        "musician",
        "singer",
        "composer",
        "painter",
        "poet",
        "novelist",
        "saint",
        "general",
        "player",
        "footballer",
        "director",
        "author",
        "mathematician",
        "physicist",
        "chemist",
        "economist",
        "journalist",
        "architect",
        "engineer",
        "inventor",
        "astronomer",
        "lawyer",
        "bishop",
        "pope",
        "explorer",
        "historian",
        "sculptor",
        "photographer",
        "comedian",
        "rapper",
        "guitarist",
        "pianist",
        "bassist",
        "drummer",
        "screenwriter",
        "producer",
        "businessman",
        "entrepreneur",
        "military person",
        "astronaut",
        "cyclist",
        "boxer",
        "wrestler",
        "athlete",
    ),
    PLACE: (
        "settlement",
        "country",
        "city",
        "town",
        "village",
        "island",
        "river",
        "mountain",
        "state",
        "region",
        "county",
        "province",
        "lake",
        "sea",
        "capital",
        "continent",
        "municipality",
        "district",
        "territory",
        "ocean",
        "peninsula",
        "protected area",
        "commune",
        "borough",
        "neighbourhood",
        "neighborhood",
        "suburb",
        "valley",
        "desert",
        "bay",
        "strait",
        "airport",
        "stadium",
        "building",
        "bridge",
        "castle",
        "cathedral",
        "park",
        "volcano",
        "canal",
        "port",
    ),
    ORG: (
        "company",
        "organization",
        "organisation",
        "university",
        "college",
        "band",
        "party",
        "club",
        "school",
        "agency",
        "institution",
        "team",
        "corporation",
        "record label",
        "newspaper",
        "publisher",
        "airline",
        "brand",
        "manufacturer",
        "army",
        "military",
        "conference",
        "league",
        "orchestra",
        "ensemble",
        "group",
    ),
    WORK: (
        "film",
        "album",
        "book",
        "song",
        "novel",
        "television",
        "video game",
        "single",
        "series",
        "play",
        "opera",
        "painting",
        "magazine",
        "journal",
        "poem",
        "symphony",
        "sculpture",
        "musical",
        "composition",
        "comic",
        "sitcom",
        "documentary",
        "short story",
        "ep",
    ),
    EVENT: (
        "war",
        "battle",
        "election",
        "conflict",
        "festival",
        "revolution",
        "treaty",
        "disaster",
        "olympics",
        "championship",
        "tournament",
        "siege",
        "spaceflight",
        "mission",
        "earthquake",
        "rebellion",
        "uprising",
        "massacre",
        "summit",
        "expedition",
    ),
    SPECIES: (
        "species",
        "taxobox",
        "speciesbox",
        "automatic taxobox",
        "genus",
        "plant",
        "bird",
        "mammal",
        "fish",
        "insect",
        "reptile",
        "amphibian",
        "fungus",
        "tree",
        "shrub",
    ),
}
_KIND_RE = {
    k: re.compile(r"\b(?:" + "|".join(re.escape(w) for w in ws) + r")(?:e?s)?\b")
    for k, ws in KIND_WORDS.items()
}
_LANGUAGE = re.compile(r"\blanguages?\b|\bdialects?\b")

# Category patterns that settle a page's kind (first match wins)
_CATEGORY_KINDS = (
    (
        re.compile(r"^\d{1,4}s?(?: BC)? (?:births|deaths)$|^Living people$|^People from |people$"),
        PERSON,
    ),
    (
        re.compile(
            r"^(?:Cities|Towns|Villages|Populated places|Municipalities|Communities|Countries|"
            r"Capitals|Rivers|Lakes|Mountains|Islands|Counties|Provinces|States|Regions) (?:in|of) "
        ),
        PLACE,
    ),
    (re.compile(r"^Member states of |^States of the |countries$"), PLACE),
    (
        re.compile(
            r"^(?:Companies|Organizations|Organisations|Universities|Political parties|Musical groups|"
            r"Record labels)\b| alumni$"
        ),
        ORG,
    ),
    (
        re.compile(
            r"^\d{4} (?:films|novels|albums|songs|singles|books|video games|compositions|plays|poems|"
            r"television series debuts)$|^(?:Films|Novels|Albums|Songs|Compositions|Works|Plays|Poems) by "
        ),
        WORK,
    ),
    (
        re.compile(
            r"^(?:Battles|Wars|Conflicts|Elections|Festivals|Treaties) (?:of|in|involving) |"
            r"^\d{4} (?:elections|disasters|in spaceflight)$"
        ),
        EVENT,
    ),
)

NATIONALITIES = frozenset(
    (
        "American",
        "British",
        "English",
        "French",
        "German",
        "Italian",
        "Spanish",
        "Dutch",
        "Greek",
        "Russian",
        "Chinese",
        "Japanese",
        "Indian",
        "Canadian",
        "Australian",
        "Irish",
        "Scottish",
        "Welsh",
        "Swedish",
        "Norwegian",
        "Danish",
        "Finnish",
        "Polish",
        "Portuguese",
        "Brazilian",
        "Mexican",
        "Egyptian",
        "Turkish",
        "Persian",
        "Arab",
        "Jewish",
        "Roman",
        "Austrian",
        "Swiss",
        "Belgian",
        "Hungarian",
        "Czech",
        "Korean",
    )
)
_TIME_TITLE = re.compile(
    rf"^(?:\d{{1,4}}s?(?: (?:BC|AD|BCE|CE))?|(?:{'|'.join(m.capitalize() for m in MONTHS)})"
    r"(?: \d{1,2})?|\d{1,2}(?:st|nd|rd|th) century(?: BC)?|\d{1,2}(?:st|nd|rd|th) millennium)$"
)
_LIST_TITLE = re.compile(r"^(?:List|Lists|Index|Outline|Timeline|Glossary) of |\(disambiguation\)$")
_TOPIC_TITLE = re.compile(
    r"^(?:Geography|History|Economy|Politics|Culture|Demographics|Transport|Religion|"
    r"Military|Flag|Coat of arms|Education|Music|Cuisine|Climate) of "
)


def title_kind(title: str) -> str | None:
    """A kind the title alone settles (months, years, lists, languages, nationalities), else None."""
    if _TIME_TITLE.match(title):
        return TIME
    if _LIST_TITLE.search(title):
        return LISTING
    if _TOPIC_TITLE.match(title):
        return CONCEPT
    if title.endswith((" language", " languages")):
        return LANGUAGE
    if title in NATIONALITIES or title.endswith(" people"):
        return NATIONALITY
    return None


def words_kind(phrase: str) -> str | None:
    """The kind a noun phrase names ("American film director" -> person), else None."""
    phrase = phrase.lower()
    if _LANGUAGE.search(phrase):
        return LANGUAGE
    head = phrase.split()[-1] if phrase.split() else ""
    for kind, rx in _KIND_RE.items():  # the head noun first: a "military conflict" is an event
        if rx.fullmatch(head):
            return kind
    for kind, rx in _KIND_RE.items():
        if rx.search(phrase):
            return kind
    return None


def page_kind(
    title: str,
    box_type: str,
    categories: tuple[str, ...],
    lead_noun: str,
    description: str,
    has_life_dates: bool,
) -> str:
    """A page's kind: title rules, then infobox type, life dates, categories, the lead's noun."""
    fixed = title_kind(title)
    if fixed is not None:
        return fixed
    if (
        description.rstrip(" .:").endswith("may refer to")
        or "may also refer to" in description[:200]
    ):
        return LISTING
    if box_type:
        kind = words_kind(box_type)
        if kind is not None:
            return kind
    if has_life_dates:
        return PERSON
    for cat in categories:
        for rx, kind in _CATEGORY_KINDS:
            if rx.search(cat):
                return kind
    if lead_noun:
        kind = words_kind(lead_noun)
        if kind is not None:
            return kind
    return CONCEPT


# Nouns a question may name its answer by ("Which city ..."): one word each, checked against the kind
NOUNS: dict[str, tuple[str, ...]] = {
    PERSON: (
        "philosopher",
        "painter",
        "poet",
        "novelist",
        "composer",
        "politician",
        "actor",
        "actress",
        "singer",
        "mathematician",
        "physicist",
        "writer",
        "scientist",
        "astronomer",
        "architect",
        "economist",
        "footballer",
        "director",
        "musician",
        "king",
        "queen",
        "emperor",
        "general",
    ),
    PLACE: (
        "city",
        "country",
        "town",
        "village",
        "island",
        "river",
        "mountain",
        "lake",
        "county",
        "province",
        "state",
        "region",
        "municipality",
        "continent",
        "territory",
    ),
    ORG: ("company", "university", "band", "party", "club", "school", "newspaper", "orchestra"),
    WORK: (
        "film",
        "album",
        "novel",
        "song",
        "book",
        "opera",
        "painting",
        "magazine",
        "play",
        "poem",
        "symphony",
        "single",
    ),
    EVENT: ("war", "battle", "election", "festival", "treaty", "revolution", "spaceflight"),
    SPECIES: ("plant", "bird", "mammal", "fish", "insect", "reptile"),
}


def answer_noun(kind: str, fine: str) -> str:
    """The noun for a question's answer: a curated head noun of its fine type, else the kind's noun."""
    words = fine.lower().split()
    if words and words[-1] in NOUNS.get(kind, ()):
        return words[-1]
    return KIND_NOUN.get(kind, "thing")


KIND_NOUN = {
    PERSON: "person",
    PLACE: "place",
    ORG: "organisation",
    WORK: "work",
    EVENT: "event",
    SPECIES: "species",
    LANGUAGE: "language",
    CONCEPT: "thing",
    TIME: "time",
    NATIONALITY: "people",
    LISTING: "list",
}
PLURAL = {
    "person": "people",
    "species": "species",
    "city": "cities",
    "country": "countries",
    "party": "parties",
    "county": "counties",
    "territory": "territories",
    "company": "companies",
    "university": "universities",
    "actress": "actresses",
    "thing": "things",
    "people": "peoples",
    "symphony": "symphonies",
    "battle": "battles",
}


def plural(noun: str) -> str:
    if noun in PLURAL:
        return PLURAL[noun]
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"
