"""Typed facts about the world read from one page, each with its evidence.

Three sources, in order of trust: infobox fields mapped to a curated relation and attribute
vocabulary (the variants real templates use), categories read as facts ("1945 births",
"People from X", "Novels by Z"), and deterministic patterns over the lead's sentences
("born in X", "founded by Y", "a city in Z"). Layout and metadata fields (images, captions,
maps, websites, references, the year a figure was estimated, ranks) are never read: only
the vocabulary below becomes a fact. Relation objects are titles to resolve later (a link's
target, a category's named entity, a phrase in the lead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikisim.corpus.page import Page, normalize_title
from wikisim.synth.attrs import MONTHS, life_dates, parse_date, parse_quantity
from wikisim.synth.kinds import (
    ANSWER_KINDS,
    EVENT,
    LANGUAGE,
    ORG,
    PERSON,
    PLACE,
    WORK,
    page_kind,
)
from wikisim.synth.names import display_name

# relation -> (infobox field variants (normalised: lower case, no digits, no separators), object kind)
RELATIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "born_in": (("birthplace", "placeofbirth", "bornplace", "birthcity"), PLACE),
    "died_in": (("deathplace", "placeofdeath", "diedplace"), PLACE),
    "buried_in": (("restingplace", "placeofburial", "burialplace", "burial"), PLACE),
    "spouse": (("spouse", "spouses", "wife", "husband"), PERSON),
    "parent": (("father", "mother", "parents", "parent"), PERSON),
    "child": (("children", "child", "issue"), PERSON),
    "influenced_by": (("influences", "influencedby"), PERSON),
    "influenced": (("influenced",), PERSON),
    "doctoral_advisor": (("doctoraladvisor", "advisor"), PERSON),
    "alma_mater": (("almamater", "education", "university"), ORG),
    "employer": (("employer", "workplaces", "institutions", "institution"), ORG),
    "party": (("party", "politicalparty"), ORG),
    "member_of": (("memberof", "affiliation", "affiliations"), ORG),
    "team": (("team", "club", "currentclub", "clubs", "nationalteam"), ORG),
    "league": (("league",), ORG),
    "country": (("country", "nation"), PLACE),
    "located_in": (
        ("location", "locationcity", "locatedin", "city", "locale", "state", "continent"),
        PLACE,
    ),
    "capital": (("capital",), PLACE),
    "largest_city": (("largestcity",), PLACE),
    "official_language": (
        ("officiallanguages", "officiallanguage", "officiallang", "nationallanguages"),
        LANGUAGE,
    ),
    "headquarters": (("headquarters", "hqlocation", "hqlocationcity", "hq"), PLACE),
    "founded_by": (("founder", "founders", "foundedby"), PERSON),
    "leader": (("leadername", "leader", "president", "chairman", "ceo"), PERSON),
    "author": (("author", "authors", "writer", "writers", "writtenby"), PERSON),
    "director": (("director", "directedby", "directors"), PERSON),
    "producer": (("producer", "producers"), PERSON),
    "starring": (("starring",), PERSON),
    "composer": (("composer", "music", "musicby"), PERSON),
    "artist": (("artist", "performer"), PERSON),
    "publisher": (("publisher",), ORG),
    "record_label": (("label", "recordlabel"), ORG),
    "developer": (("developer", "developers"), ORG),
    "manufacturer": (("manufacturer",), ORG),
    "notable_work": (("notableworks", "works", "notablework"), WORK),
    "predecessor": (("predecessor", "before", "preceded", "precededby"), ""),
    "successor": (("successor", "after", "succeeded", "succeededby"), ""),
    "fought_in": (("battles", "wars"), EVENT),
    "commander": (("commander",), PERSON),
    "place": (("place",), PLACE),
    "launch_site": (("launchsite",), PLACE),
    "flows_into": (("mouth", "rivermouth", "mouthlocation"), PLACE),
}
FIELD_RELATION = {variant: rel for rel, (variants, _) in RELATIONS.items() for variant in variants}
RANGE = {rel: kind for rel, (_, kind) in RELATIONS.items()}
RANGE.update({"from": PLACE, "part_of": "", "creator": PERSON})
_ANY = (PERSON, PLACE, ORG, WORK, EVENT)
# relation -> (subject kinds, object kinds): a fact whose ends have other kinds is a misreading
SIGNATURE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{r: ((PERSON,), (PLACE,)) for r in ("born_in", "died_in", "buried_in", "from")},
    **{
        r: ((PERSON,), (PERSON,)) for r in ("spouse", "parent", "influenced_by", "doctoral_advisor")
    },
    **{r: ((PERSON,), (ORG,)) for r in ("alma_mater", "employer", "party", "team")},
    "member_of": ((PERSON, PLACE, ORG), (ORG,)),
    "league": ((ORG,), (ORG,)),
    "country": ((PLACE, ORG, EVENT), (PLACE,)),
    "located_in": ((PLACE, ORG), (PLACE,)),
    "capital": ((PLACE,), (PLACE,)),
    "largest_city": ((PLACE,), (PLACE,)),
    "official_language": ((PLACE,), (LANGUAGE,)),
    "headquarters": ((ORG,), (PLACE,)),
    "founded_by": ((ORG, PLACE, WORK, EVENT), (PERSON, ORG)),
    "leader": ((PLACE, ORG), (PERSON,)),
    **{r: ((WORK,), (PERSON,)) for r in ("author", "director", "producer", "starring", "composer")},
    "artist": ((WORK,), (PERSON, ORG)),
    **{
        r: ((WORK, ORG), (ORG,)) for r in ("publisher", "record_label", "developer", "manufacturer")
    },
    "creator": ((WORK, ORG, PLACE, EVENT), (PERSON, ORG)),
    "notable_work": ((PERSON,), (WORK,)),
    "predecessor": (_ANY, _ANY),
    "fought_in": ((PERSON, ORG, PLACE), (EVENT,)),
    "commander": ((EVENT,), (PERSON,)),
    "place": ((EVENT,), (PLACE,)),
    "launch_site": ((EVENT, WORK), (PLACE,)),
    "flows_into": ((PLACE,), (PLACE,)),
    "part_of": (_ANY, _ANY),
}


def fits(relation: str, subject_kind: str, object_kind: str) -> bool:
    """Whether a fact's ends have kinds its relation allows (a predecessor is of its successor's kind)."""
    subjects, objects = SIGNATURE[relation]
    same = relation not in ("predecessor", "part_of") or subject_kind == object_kind
    return subject_kind in subjects and object_kind in objects and same


# A relation's domain, where it settles the subject's kind ("born in" -> a person)
DOMAIN = {
    "born_in": PERSON,
    "died_in": PERSON,
    "buried_in": PERSON,
    "spouse": PERSON,
    "influenced_by": PERSON,
    "influenced": PERSON,
    "alma_mater": PERSON,
    "doctoral_advisor": PERSON,
    "from": PERSON,
    "director": WORK,
    "starring": WORK,
    "author": WORK,
    "record_label": WORK,
    "capital": PLACE,
    "official_language": PLACE,
    "largest_city": PLACE,
    "flows_into": PLACE,
}
# relation -> its inverse, stored once in the forward direction
INVERSE = {"influenced": "influenced_by", "child": "parent", "successor": "predecessor"}

# attribute -> (field variants, value type, unit)
ATTRIBUTES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "birth_date": (("birthdate", "born", "dateofbirth"), "date", ""),
    "death_date": (("deathdate", "died", "dateofdeath"), "date", ""),
    "founded": (
        (
            "founded",
            "foundation",
            "established",
            "formation",
            "formed",
            "foundeddate",
            "inception",
            "establisheddate",
        ),
        "date",
        "",
    ),
    "released": (
        (
            "released",
            "releasedate",
            "published",
            "pubdate",
            "firstaired",
            "premiere",
            "releaseddate",
            "date",
        ),
        "date",
        "",
    ),
    "opened": (("opened", "openingdate", "opening"), "date", ""),
    "population": (
        ("populationtotal", "population", "populationcensus", "pop", "populationestimate"),
        "number",
        "people",
    ),
    "area": (("areakm", "areatotalkm", "areatotal", "area"), "number", "km2"),
    "elevation": (("elevationm", "elevation", "highestelevation"), "number", "m"),
    "length": (("lengthkm", "length"), "number", "km"),
    "employees": (("numemployees", "employees"), "number", "employees"),
    "runtime": (("runtime", "length"), "number", "minutes"),
    "pages": (("pages",), "number", "pages"),
}
FIELD_ATTRS: dict[str, list[str]] = {}
for _attr, (_variants, _, _) in ATTRIBUTES.items():
    for _v in _variants:
        FIELD_ATTRS.setdefault(_v, []).append(_attr)
# which kinds an attribute makes sense for (a film's "length" is its runtime, a river's is in km)
ATTR_KINDS = {
    "birth_date": (PERSON,),
    "death_date": (PERSON,),
    "population": (PLACE,),
    "area": (PLACE,),
    "elevation": (PLACE,),
    "length": (PLACE,),
    "runtime": (WORK,),
    "pages": (WORK,),
    "released": (WORK,),
    "employees": (ORG,),
    "founded": (ORG, PLACE, EVENT),
    "opened": (PLACE, ORG),
}
_IMPERIAL = re.compile(r"\b(?:ft|feet|mi|miles|sq\s*mi|acres?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RelFact:
    """subject -relation-> object; a side is "" for the page itself, else candidate titles."""

    relation: str
    subject: tuple[str, ...]  # () = the page
    obj: tuple[str, ...]
    evidence: str  # "infobox field birth_place: ...", "category: ...", or the sentence
    source: str  # infobox | category | lead | title
    need_page: bool = False  # the object must resolve to a page (an unlinked phrase in plain text)


@dataclass(frozen=True)
class AttrFact:
    attr: str
    year: int
    month: int
    value: float  # a date's year, or the quantity
    unit: str
    evidence: str
    source: str


@dataclass(frozen=True)
class PageFacts:
    kind: str
    noun: str  # fine type: "settlement", "film director"
    rels: tuple[RelFact, ...]
    attrs: tuple[AttrFact, ...]


def field_key(name: str) -> str:
    """Infobox field name as the vocabulary keys it: "Place_of-birth2" -> "placeofbirth"."""
    return re.sub(r"[^a-z]", "", name.lower())


_ISA = re.compile(r"\b(?:is|was|are|were)\s+(?:a|an|the|one of the)\s+([^.,;:()]{2,80})")
_STOP = re.compile(
    r"\s(?:of|in|on|that|which|who|whose|from|for|by|with|and|to|at|located|where|based|"
    r"known|born|founded|released|published|written|directed)\s"
)


def lead_noun(description: str, box_type: str) -> str:
    """The fine type: the infobox type, else the head of the lead's "is a ___"."""
    box_type = re.sub(r"<!--.*?(-->|$)", "", box_type, flags=re.S).strip().lower()
    if box_type and "box" not in box_type:
        return box_type
    m = _ISA.search(description)
    if not m:
        return ""
    phrase = _STOP.split(" " + m.group(1) + " ", maxsplit=1)[0].strip()
    words = [w for w in phrase.split() if not re.search(r"\d", w)][-3:]
    return " ".join(words).lower()


# ---- categories -----------------------------------------------------------------------------
_CAT_REL = (
    (re.compile(r"^People from (.+)$"), "from", PERSON),
    (re.compile(r"^(.+) alumni$"), "alma_mater", PERSON),
    (
        re.compile(
            r"^(?:Cities|Towns|Villages|Populated places|Municipalities|Communities|Capitals|Counties|"
            r"Provinces|Regions|Universities and colleges|Islands|Lakes|Mountains|Airports) (?:in|of) (.+)$"
        ),
        "located_in",
        "",
    ),
    (re.compile(r"^Countries in (.+)$"), "located_in", PLACE),
    (re.compile(r"^Rivers of (.+)$"), "located_in", PLACE),
    (re.compile(r"^(?:Novels|Books|Works|Plays|Poems|Short stories) by (.+)$"), "author", WORK),
    (re.compile(r"^(?:Compositions|Operas|Symphonies|Songs) by (.+)$"), "composer", WORK),
    (re.compile(r"^Films directed by (.+)$"), "director", WORK),
    (re.compile(r"^(.+) albums$"), "artist", WORK),
    (re.compile(r"^Burials at (.+)$"), "buried_in", PERSON),
    (re.compile(r"^Member states of (?:the )?(.+)$"), "member_of", PLACE),
    (re.compile(r"^Members of (?:the )?(.+)$"), "member_of", PERSON),
    (re.compile(r"^(?:Companies|Organizations|Organisations) based in (.+)$"), "headquarters", ORG),
)
_CAT_YEAR = (
    (re.compile(r"^(\d{3,4}) births$"), "birth_date"),
    (re.compile(r"^(\d{3,4}) deaths$"), "death_date"),
    (
        re.compile(
            r"^(\d{4}) (?:films|novels|albums|songs|singles|books|video games|compositions|plays|poems|"
            r"debut albums|television series debuts)$"
        ),
        "released",
    ),
    (
        re.compile(
            r"^(?:Companies|Organizations|Organisations|Awards|States and territories|Populated places|"
            r"Educational institutions|Universities and colleges) (?:established|founded|disestablished) in "
            r"(\d{4})$"
        ),
        "founded",
    ),
    (re.compile(r"^(\d{4}) establishments in "), "founded"),
)
# a category's object is a named entity only if it does not read as a generic phrase
_GENERIC_OBJ = re.compile(
    r"^(?:the )?(?:\d|[a-z])|\b(?:of|by|in) the |century|\bpeople\b|\bfilms?\b"
)


def category_facts(cats: tuple[str, ...]) -> tuple[list[RelFact], list[AttrFact], str]:
    """Facts read from category names, and a kind they imply ("" if none)."""
    rels: list[RelFact] = []
    attrs: list[AttrFact] = []
    implied = ""
    for cat in cats:
        for rx, attr in _CAT_YEAR:
            m = rx.search(cat)
            if m:
                year = int(m.group(1))
                attrs.append(
                    AttrFact(attr, year, 0, float(year), "", f"category: {cat}", "category")
                )
                break
        for rx, rel, kind in _CAT_REL:
            m = rx.match(cat)
            if m and not _GENERIC_OBJ.search(m.group(1)):
                rels.append(
                    RelFact(rel, (), (normalize_title(m.group(1)),), f"category: {cat}", "category")
                )
                implied = implied or kind
                break
    return rels, attrs, implied


# ---- the lead -------------------------------------------------------------------------------
_NAME = r"(?P<e>[A-Z][\w'’.\-]*(?:,? (?:[A-Z][\w'’.\-]*|of|the|de|la|von|van))*)"
# "by Hong Kong pop singer Charlene Choi", "by Pink Floyd guitarist, David Gilmour": an agent
# named after a descriptor (capitalised words as adjectives, then a role noun) is the later name
_ROLES = (
    "singer|singer-songwriter|songwriter|rapper|musician|guitarist|bassist|drummer|pianist|"
    "band|duo|trio|group|quartet|artist|composer|producer|director|filmmaker|screenwriter|writer|"
    "author|novelist|poet|playwright|journalist|painter|sculptor|architect|actor|actress|"
    "comedian|DJ|company|studio|developer|publisher|label|designer|engineer|businessman|"
    "entrepreneur|philanthropist|politician|scientist|physicist|mathematician|inventor"
)
_DESCRIBED = rf"(?:(?:[A-Z][\w'’\-]* )*(?:[a-z][\w\-]* ){{0,3}}?(?:{_ROLES}),? )?"
_PLACE_NOUNS = (
    "city|town|village|municipality|county|commune|district|province|region|state|river|lake|"
    "mountain|island|suburb|neighbourhood|neighborhood|port|settlement|borough|parish|capital|"
    "country|peninsula|valley|range|archipelago|desert|area|kingdom|nation"
)
_LEAD_PATTERNS: tuple[tuple[str, re.Pattern, bool], ...] = tuple(
    (rel, re.compile(rx), reverse)
    for rel, rx, reverse in (
        ("born_in", rf"\bborn\b[^.;()]{{0,40}}?\bin (?:the )?{_NAME}", False),
        ("died_in", rf"\bdied\b[^.;()]{{0,40}}?\bin (?:the )?{_NAME}", False),
        (
            "capital",
            rf"\b(?:is|was) the (?:capital|capital city) (?:and largest city )?of (?:the )?{_NAME}",
            True,
        ),
        (
            "located_in",
            rf"\b(?:is|was) an? (?:[a-z\-]+ ){{0,4}}(?:{_PLACE_NOUNS})(?: and [a-z ]+)? "
            rf"(?:in|of|on) (?:the )?(?:(?:north|south|east|west|central|northern|southern|eastern|"
            rf"western|north-?eastern|north-?western|south-?eastern|south-?western) )?{_NAME}",
            False,
        ),
        ("located_in", rf"\blocated (?:in|on) (?:the )?{_NAME}", False),
        ("founded_by", rf"\bfounded (?:in \d{{4}} )?by (?:the )?{_DESCRIBED}{_NAME}", False),
        ("director", rf"\bdirected by {_DESCRIBED}{_NAME}", False),
        ("author", rf"\b(?:written|authored) by {_DESCRIBED}{_NAME}", False),
        (
            "author",
            rf"\b(?:novel|book|poem|play|short story|essay|treatise|memoir) by {_DESCRIBED}{_NAME}",
            False,
        ),
        (
            "composer",
            rf"\b(?:composed by|opera by|symphony by|composition by) {_DESCRIBED}{_NAME}",
            False,
        ),
        (
            "creator",
            rf"\b(?:created|invented|designed|developed|painted|discovered) by (?:the )?{_DESCRIBED}{_NAME}",
            False,
        ),
        ("creator", rf"\b(?:painting|sculpture|statue|fresco|mural) by {_DESCRIBED}{_NAME}", False),
        (
            "artist",
            rf"\b(?:album|single|song|EP) (?:recorded )?by (?:the )?(?:[a-z]+ )*{_DESCRIBED}{_NAME}",
            False,
        ),
        ("publisher", rf"\bpublished by (?:the )?{_DESCRIBED}{_NAME}", False),
        ("producer", rf"\bproduced by (?:the )?{_DESCRIBED}{_NAME}", False),
        ("starring", rf"\bstarring {_NAME}", False),
        ("member_of", rf"\b(?:is|was) a (?:founding )?member of (?:the )?{_NAME}", False),
        ("spouse", rf"\b(?:married|wife of|husband of|widow of|widower of) {_NAME}", False),
        (
            "parent",
            rf"\b(?:son|daughter|child|eldest son|eldest daughter) of (?:the )?(?:[a-z]+ )?{_NAME}",
            False,
        ),
        (
            "alma_mater",
            rf"\b(?:graduated from|studied at|educated at|a graduate of) (?:the )?{_NAME}",
            False,
        ),
        ("headquarters", rf"\b(?:headquartered|based) in (?:the )?{_NAME}", False),
        ("part_of", rf"\b(?:is|was|forms) (?:a )?part of (?:the )?{_NAME}", False),
        ("flows_into", rf"\b(?:tributary of|flows into|empties into) (?:the )?{_NAME}", False),
        ("team", rf"\bplay(?:s|ed) for (?:the )?{_NAME}", False),
    )
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_PRONOUNS = frozenset(("He", "She", "It", "They", "The"))


def name_candidates(phrase: str) -> tuple[str, ...]:
    """Titles a captured capitalised phrase may name, longest first, cut only at commas
    ("Hodgenville, Kentucky, Ohio" -> itself, "Hodgenville, Kentucky", "Hodgenville"); a
    trailing ", United States" or ", U.S." goes first, since no place's title ends in it."""
    phrase = phrase.strip(" ,.'’")
    for tail in (" of", " the", " and", " on", " de", " la", " upon", " von", " van"):
        while phrase.endswith(tail):
            phrase = phrase[: -len(tail)].rstrip(" ,")
    if not phrase or not phrase[0].isupper():
        return ()
    phrase = phrase.split(" and ", 1)[0].rstrip(" ,")
    parts = phrase.split(", ")
    if len(parts) > 1 and parts[-1].rstrip(".") in _COUNTRY_TAILS:
        parts = parts[:-1]  # "Warren County, Iowa, United States": no title ends in its country
    out: list[str] = []
    for n in range(len(parts), 0, -1):
        cand = ", ".join(parts[:n]).rstrip(",.")
        words = cand.split()
        if (
            not words
            or len(words) > 6
            or cand in out
            or not cand[-1].isalnum()
            or len(words[-1]) < 2
        ):
            continue
        if any(w.lower().strip(",") in MONTHS for w in words) or words[-1] in (
            "of",
            "the",
            "de",
            "la",
            "von",
            "van",
        ):
            continue
        if _ADJECTIVE.search(words[-1]):  # "the Northwestern Iberian peninsula": not a name
            continue
        out.append(cand)
    return tuple(out)


_ADJECTIVE = re.compile(r"(?:ian|ern|ese|ish|ic)$")
_COUNTRY_TAILS = frozenset(
    {"United States", "U.S", "US", "USA", "U.S.A", "United States of America"}
)


def lead_facts(page: Page, max_chars: int = 1500) -> list[RelFact]:
    """Relations stated in the lead's sentences; an object is a link's target where the phrase is
    a link's anchor, else any page the phrase names."""
    lead = page.sections[0].text if page.sections and page.sections[0].level == 0 else page.text
    anchors = {ln.anchor: ln.target for ln in page.links if ln.anchor and not ln.field}
    out: list[RelFact] = []
    names = {w for w in re.findall(r"[A-Z][\w'’\-]+", page.title) if len(w) > 2}
    for sentence in _SENTENCE.split(lead[:max_chars]):
        head = re.match(r"[\w'’\-]+", sentence)
        if head is None or not (head.group(0) in names or head.group(0) in _PRONOUNS):
            continue  # a sentence about something else ("His father was born in ...")
        for rel, rx, reverse in _LEAD_PATTERNS:
            for m in rx.finditer(sentence):
                cands = name_candidates(m.group("e"))
                if RANGE.get(rel) != PLACE:  # only place names carry commas ("Paris, Texas")
                    cands = tuple(c for c in cands if "," not in c)
                if not cands:
                    continue
                linked = next((anchors[c] for c in cands if c in anchors), None)
                obj = (linked,) if linked else cands
                evidence = sentence.strip()[:300]
                need_page = (
                    linked is None and " " not in cands[0]
                )  # one bare word is too loose a name
                if reverse:
                    out.append(RelFact(rel, obj, (), evidence, "lead", need_page=need_page))
                else:
                    out.append(RelFact(rel, (), obj, evidence, "lead", need_page=need_page))
    return out


# ---- infobox --------------------------------------------------------------------------------
def _attr_fact(attr: str, value: str, field: str) -> AttrFact | None:
    _, vtype, unit = ATTRIBUTES[attr]
    evidence = f"infobox {field}: {value[:120]}"
    if vtype == "date":
        d = parse_date(value)
        if d is None or d.year < 1 or d.year > 2030:
            return None
        return AttrFact(attr, d.year, d.month, float(d.year), "", evidence, "infobox")
    if _IMPERIAL.search(value) or re.fullmatch(r"\s*\d{4}\s*", value):
        return None
    q = parse_quantity(value)
    if q is None or q.value <= 0:
        return None
    return AttrFact(attr, 0, 0, q.value, unit, evidence, "infobox")


def infobox_facts(page: Page, kind: str) -> tuple[list[RelFact], list[AttrFact]]:
    rels: list[RelFact] = []
    attrs: list[AttrFact] = []
    if page.infobox is None:
        return rels, attrs
    linked: dict[str, list[str]] = {}
    for ln in page.links:
        if ln.field:
            linked.setdefault(ln.field, []).append(ln.target)
    seen_attr: set[str] = set()
    for name, value in page.infobox.fields:
        key = field_key(name)
        rel = FIELD_RELATION.get(key)
        if rel is not None:
            for target in dict.fromkeys(linked.get(name, ())):
                evidence = f"infobox {name}: {value[:160]}"
                if rel in INVERSE:
                    rels.append(RelFact(INVERSE[rel], (target,), (), evidence, "infobox"))
                else:
                    rels.append(RelFact(rel, (), (target,), evidence, "infobox"))
            continue
        for attr in FIELD_ATTRS.get(key, ()):
            if attr in seen_attr or kind not in ATTR_KINDS.get(attr, (kind,)):
                continue
            fact = _attr_fact(attr, value, name)
            if fact is not None:
                seen_attr.add(attr)
                attrs.append(fact)
    return rels, attrs


_TEXT_NUMBERS = (
    (
        "population",
        re.compile(
            r"\bpopulation (?:of|was|is|was estimated at|of about|of approximately) "
            r"(?:about |approximately |around |over |nearly |roughly )?"
            r"(\d{1,3}(?:,\d{3})+|\d{4,})(?: (million))?"
        ),
        "people",
    ),
    (
        "area",
        re.compile(
            r"\barea of (?:about |approximately )?(\d[\d,.]*) ?(?:km2|km²|square kilometres|"
            r"square kilometers)"
        ),
        "km2",
    ),
    (
        "elevation",
        re.compile(r"\b(?:elevation|altitude) of (?:about )?(\d[\d,.]*) ?(?:m|metres|meters)\b"),
        "m",
    ),
)
_TEXT_DATES = (
    (
        "founded",
        re.compile(r"\b(?:founded|established) (?:in|on) (?:[^.]{0,20}?)\b(1\d{3}|20[0-2]\d)\b"),
    ),
    ("released", re.compile(r"\breleased (?:in|on) (?:[^.]{0,20}?)\b(1\d{3}|20[0-2]\d)\b")),
)
_LEAD_YEAR_WORK = re.compile(
    r"\b(?:is|was) an? ((?:1[89]|20)\d\d) (?:[A-Z][a-z]+ )*(?:[a-z\-]+ )*"
    r"(?:film|novel|album|song|single|book|video game|play|opera|painting)\b"
)


def text_attrs(page: Page, kind: str) -> list[AttrFact]:
    """Life dates, numbers and years stated in the lead."""
    head = page.text[:2000]
    out: list[AttrFact] = []
    first = page.description or head.split("\n", 1)[0]
    if kind == PERSON:
        for attr, d in life_dates(first).items():
            if d.year >= 1:
                out.append(AttrFact(attr, d.year, d.month, float(d.year), "", first[:300], "lead"))
    for attr, rx, unit in _TEXT_NUMBERS:
        if kind not in ATTR_KINDS[attr]:
            continue
        m = next((m for m in rx.finditer(head) if _of_page(head, m.start(), page.title)), None)
        if m:
            try:
                value = float(m.group(1).replace(",", "").rstrip("."))
            except ValueError:
                continue
            if rx.groups > 1 and m.group(2):
                value *= 1e6
            out.append(AttrFact(attr, 0, 0, value, unit, _sentence_at(head, m.start()), "lead"))
    for attr, rx in _TEXT_DATES:
        if kind not in ATTR_KINDS[attr]:
            continue
        m = rx.search(head)
        if m:
            year = int(m.group(1))
            out.append(
                AttrFact(attr, year, 0, float(year), "", _sentence_at(head, m.start()), "lead")
            )
    if kind == WORK:
        m = _LEAD_YEAR_WORK.search(first)
        if m:
            year = int(m.group(1))
            out.append(AttrFact("released", year, 0, float(year), "", first[:300], "lead"))
    return out


_RELATIVE = re.compile(r"\b(?:which|whose|where)\b")


def _of_page(text: str, pos: int, title: str) -> bool:
    """Whether the number at `pos` is said of the page's own subject: its sentence names the
    page (or starts "It"/"Its") before the number, outside a relative clause. A lead states
    others' numbers too: "Memphis is the state's largest city, with a population of 653,450" and
    "Tennessee's capital ... is Nashville, which has a population of 601,222" are not Tennessee's."""
    start = max(text.rfind(". ", 0, pos) + 2, text.rfind("\n", 0, pos) + 1, 0)
    before = text[start:pos]
    name = re.split(r" \(|,", title, maxsplit=1)[0]
    named = name in before or before.startswith(("It ", "Its "))
    return named and not _RELATIVE.search(before)


def _sentence_at(text: str, pos: int) -> str:
    start = max(text.rfind(". ", 0, pos) + 2, text.rfind("\n", 0, pos) + 1, 0)
    end = text.find(". ", pos)
    return text[start : end + 1 if end >= 0 else len(text)].strip()[:300]


_TITLE_PLACE = re.compile(r"^[^,()]+, ([A-Z][^,()]+)$")


def page_facts(page: Page) -> PageFacts:
    """Every typed fact one page states about the world, with the page's kind and fine type."""
    box_type = page.infobox.type if page.infobox is not None else ""
    description = page.description or page.text.split("\n", 1)[0][:400]
    noun = lead_noun(description, box_type)
    cat_rels, cat_attrs, _ = category_facts(page.categories)
    kind = page_kind(
        page.title,
        box_type,
        page.categories,
        noun,
        description,
        bool(life_dates(description[:300])),
    )
    if kind not in ANSWER_KINDS:  # a list, a year, a language: what it says is about other things
        return PageFacts(kind, noun, (), ())
    box_rels, box_attrs = infobox_facts(page, kind)
    text = Readable(page.text)
    rels = [r for r in (*box_rels, *cat_rels, *lead_facts(page)) if text.names(r)]
    attrs: list[AttrFact] = []
    have: set[str] = set()
    for a in (*box_attrs, *cat_attrs, *text_attrs(page, kind)):
        if a.attr not in have and kind in ATTR_KINDS.get(a.attr, (kind,)) and text.states(a):
            have.add(a.attr)
            attrs.append(a)
    m = _TITLE_PLACE.match(page.title)
    if kind == PLACE and m:
        rels.append(RelFact("located_in", (), (m.group(1),), f"the name {page.title}", "title"))
    return PageFacts(kind, noun, tuple(dict.fromkeys(rels)), tuple(attrs))


class Readable:
    """Whether a page's text (what the env's visit shows) states a fact's far end or value:
    a fact only the infobox or a category holds cannot be checked by reading the page."""

    def __init__(self, text: str) -> None:
        self.lower = text.lower()
        self.plain = text.replace(",", "")

    def names(self, f: RelFact) -> bool:
        return any(display_name(c).lower() in self.lower for c in (f.obj or f.subject))

    def states(self, a: AttrFact) -> bool:
        if a.year:
            return str(a.year) in self.plain
        v = a.value
        forms = [f"{v:g}" if v != int(v) else str(int(v))]
        if v >= 1e6:
            forms.append(f"{v / 1e6:g} million")
        return any(f in self.plain for f in forms)
