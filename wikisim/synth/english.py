"""Natural English for a constraint tree: verb phrases, relative clauses, coordination.

Why verb phrases: every constraint is realised as a phrase about the answer ("was born in
the late 1880s", "was directed by a person who was born in Vienna"), so phrases coordinate
("Which person was born ..., studied at ... and ...?"), nest as relative clauses in chains,
and negate by one rule. Several phrasings per relation are picked by the seeded rng, so the
same record always reads the same way. Numbers read as words where English writes them so,
periods as decades, parts of decades and centuries with ordinals.
"""

from __future__ import annotations

import random
import re

from wikisim.synth.constraints import (
    Compare,
    Constraint,
    CountOf,
    DateIn,
    Described,
    Extreme,
    HasAttr,
    IsKind,
    Named,
    NameInitials,
    NameStarts,
    Not,
    NumberIn,
    Path,
    Step,
    Target,
)
from wikisim.synth.kinds import KIND_NOUN, PERSON, PLACE, plural
from wikisim.synth.names import display_name

# relation -> (phrases with the answer as subject and {o} the object,
#              phrases with the answer as object and {s} the subject); each starts with its verb
RELATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "born_in": (("was born in {o}",), ("is the birthplace of {s}", "is where {s} was born")),
    "died_in": (("died in {o}",), ("is where {s} died",)),
    "buried_in": (
        ("is buried in {o}", "was laid to rest in {o}"),
        ("is the resting place of {s}", "is where {s} is buried"),
    ),
    "from": (("came from {o}", "was from {o}"), ("is the home of {s}", "is where {s} came from")),
    "spouse": (
        ("was married to {o}", "was the spouse of {o}"),
        ("was married to {s}", "was the spouse of {s}"),
    ),
    "parent": (("was a child of {o}",), ("was a parent of {s}",)),
    "influenced_by": (
        ("was influenced by {o}", "drew on the work of {o}"),
        ("was an influence on {s}", "influenced {s}"),
    ),
    "doctoral_advisor": (
        ("was a doctoral student of {o}",),
        ("was the doctoral advisor of {s}", "supervised the doctorate of {s}"),
    ),
    "alma_mater": (
        ("studied at {o}", "was educated at {o}"),
        ("is where {s} studied", "counts {s} among its alumni"),
    ),
    "employer": (("worked for {o}", "was employed by {o}"), ("employed {s}",)),
    "party": (("was a member of {o}", "belonged to {o}"), ("counted {s} among its members",)),
    "member_of": (("is a member of {o}", "belongs to {o}"), ("counts {s} among its members",)),
    "team": (("played for {o}",), ("is a team that {s} played for",)),
    "league": (("plays in {o}",), ("is the league of {s}",)),
    "country": (("is in {o}", "lies in {o}"), ("is the country of {s}",)),
    "located_in": (("is located in {o}", "lies in {o}"), ("contains {s}",)),
    "capital": (("has {o} as its capital",), ("is the capital of {s}",)),
    "largest_city": (("has {o} as its largest city",), ("is the largest city of {s}",)),
    "official_language": (
        ("has {o} as an official language",),
        ("is an official language of {s}",),
    ),
    "headquarters": (
        ("is headquartered in {o}", "has its headquarters in {o}"),
        ("is where {s} has its headquarters",),
    ),
    "founded_by": (("was founded by {o}",), ("founded {s}", "was a founder of {s}")),
    "leader": (("was led by {o}",), ("led {s}", "was a leader of {s}")),
    "author": (("was written by {o}",), ("wrote {s}", "is the author of {s}")),
    "director": (("was directed by {o}",), ("directed {s}",)),
    "producer": (("was produced by {o}",), ("produced {s}",)),
    "starring": (("starred {o}", "has {o} in its cast"), ("starred in {s}", "appeared in {s}")),
    "composer": (
        ("was composed by {o}", "has music by {o}"),
        ("composed {s}", "wrote the music for {s}"),
    ),
    "artist": (("was recorded by {o}", "is by {o}"), ("recorded {s}",)),
    "publisher": (("was published by {o}",), ("published {s}",)),
    "record_label": (("was released by {o}",), ("released {s}",)),
    "developer": (("was developed by {o}",), ("developed {s}",)),
    "manufacturer": (("was made by {o}", "was manufactured by {o}"), ("made {s}",)),
    "creator": (("was created by {o}",), ("created {s}",)),
    "notable_work": (("is known for {o}",), ("is a notable work of {s}",)),
    "predecessor": (("succeeded {o}", "came after {o}"), ("was succeeded by {s}", "preceded {s}")),
    "fought_in": (("fought in {o}", "took part in {o}"), ("involved {s}",)),
    "commander": (
        ("had {o} among its commanders",),
        ("was a commander in {s}", "commanded forces in {s}"),
    ),
    "place": (("took place in {o}",), ("is where {s} took place",)),
    "launch_site": (("was launched from {o}",), ("is where {s} was launched from",)),
    "flows_into": (("flows into {o}",), ("receives the waters of {s}",)),
    "part_of": (("is part of {o}", "forms part of {o}"), ("includes {s}",)),
}
_PAST = {
    "died": "die",
    "came": "come",
    "studied": "study",
    "worked": "work",
    "belonged": "belong",
    "played": "play",
    "plays": "play",
    "lies": "lie",
    "contains": "contain",
    "founded": "found",
    "led": "lead",
    "wrote": "write",
    "directed": "direct",
    "produced": "produce",
    "starred": "star",
    "appeared": "appear",
    "composed": "compose",
    "recorded": "record",
    "published": "publish",
    "released": "release",
    "developed": "develop",
    "made": "make",
    "created": "create",
    "succeeded": "succeed",
    "preceded": "precede",
    "fought": "fight",
    "took": "take",
    "involved": "involve",
    "commanded": "command",
    "flows": "flow",
    "forms": "form",
    "includes": "include",
    "influenced": "influence",
    "employed": "employ",
    "counted": "count",
    "counts": "count",
    "belongs": "belong",
    "drew": "draw",
    "supervised": "supervise",
    "had": "have",
    "has": "have",
    "receives": "receive",
}
_PRESENT = {
    "lies",
    "contains",
    "plays",
    "flows",
    "forms",
    "includes",
    "counts",
    "belongs",
    "has",
    "receives",
}
_AUX = {"is", "was", "are", "were"}
_PLURAL_VERB = {
    "is": "are",
    "was": "were",
    "has": "have",
    "lies": "lie",
    "contains": "contain",
    "plays": "play",
    "flows": "flow",
    "forms": "form",
    "includes": "include",
    "counts": "count",
    "belongs": "belong",
    "receives": "receive",
}

# attribute -> (verb phrase, modifier after a noun, (less, more) comparatives, (min, max) superlatives)
ATTRIBUTES: dict[str, tuple[str, str, tuple[str, str], tuple[str, str]]] = {
    "birth_date": (
        "was born in {v}",
        "born in {v}",
        ("was born before {o}", "was born after {o}"),
        ("the oldest", "the youngest"),
    ),
    "death_date": (
        "died in {v}",
        "who died in {v}",
        ("died before {o}", "died after {o}"),
        ("the first to die", "the last to die"),
    ),
    "founded": (
        "was founded in {v}",
        "founded in {v}",
        ("was founded before {o}", "was founded after {o}"),
        ("the oldest", "the most recently founded"),
    ),
    "released": (
        "came out in {v}",
        "released in {v}",
        ("came out before {o}", "came out after {o}"),
        ("the earliest", "the most recent"),
    ),
    "opened": (
        "opened in {v}",
        "opened in {v}",
        ("opened before {o}", "opened after {o}"),
        ("the first to open", "the last to open"),
    ),
    "population": (
        "has {v} inhabitants",
        "with {v} inhabitants",
        ("has fewer inhabitants than {o}", "has more inhabitants than {o}"),
        ("the least populous", "the most populous"),
    ),
    "area": (
        "covers {v} square kilometres",
        "covering {v} square kilometres",
        ("is smaller than {o}", "is larger than {o}"),
        ("the smallest", "the largest"),
    ),
    "elevation": (
        "lies {v} metres above sea level",
        "lying {v} metres above sea level",
        ("lies lower than {o}", "lies higher than {o}"),
        ("the lowest", "the highest"),
    ),
    "length": (
        "is {v} kilometres long",
        "{v} kilometres long",
        ("is shorter than {o}", "is longer than {o}"),
        ("the shortest", "the longest"),
    ),
    "employees": (
        "employs {v} people",
        "with {v} employees",
        ("employs fewer people than {o}", "employs more people than {o}"),
        ("the smallest employer", "the largest employer"),
    ),
    "runtime": (
        "runs for {v} minutes",
        "running {v} minutes",
        ("is shorter than {o}", "is longer than {o}"),
        ("the shortest", "the longest"),
    ),
    "pages": (
        "runs to {v} pages",
        "of {v} pages",
        ("is shorter than {o}", "is longer than {o}"),
        ("the shortest", "the longest"),
    ),
}
_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)


def article(phrase: str) -> str:
    """ "a" or "an" before phrase, by its sound for the common cases."""
    w = phrase.lower()
    if re.match(r"(?:uni|use|eu|one|once|u\.)", w):
        return "a"
    if (
        re.match(r"(?:hour|honou?r|heir)", w)
        or w[:1] in "aeiou"
        or re.match(r"[fhlmnrsx](?:\b|\d)", w)
    ):
        return "an"
    return "a"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def number(v: float) -> str:
    """A round number as English writes it: words to twelve, "2.5 million", else digits with commas."""
    if v == int(v) and 0 <= v <= 12:
        return _WORDS[int(v)]
    for scale, word in ((1e9, "billion"), (1e6, "million")):
        if v >= scale:
            q = v / scale
            if q == int(q):
                return f"{number(q)} {word}"
            return f"{q:g} {word}"
    return f"{int(v):,}" if v == int(v) else f"{v:,.1f}"


def range_words(lo: float, hi: float) -> str:
    """ "between two and three million", "between 40,000 and 50,000", "fewer than ten"."""
    if lo <= 0:
        return f"fewer than {number(hi)}"
    for scale, word in ((1e9, "billion"), (1e6, "million")):
        if lo >= scale and hi >= scale:
            return f"between {number(lo / scale)} and {number(hi / scale)} {word}"
    if hi > 12 >= lo:  # both ends in one style: "between 10 and 20", not "between ten and 20"
        return f"between {lo:,.0f} and {number(hi)}"
    return f"between {number(lo)} and {number(hi)}"


def coordinate(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def negate(vp: str) -> str:
    """ "was born in X" -> "was not born in X"; "died in X" -> "did not die in X"."""
    first, _, rest = vp.partition(" ")
    if first in _AUX:
        return f"{first} not {rest}"
    base = _PAST.get(first)
    if base is None:
        raise ValueError(f"cannot negate {vp!r}: add its verb to english._PAST")
    aux = "does" if first in _PRESENT else "did"
    return f"{aux} not {base} {rest}"


def pluralise(vp: str) -> str:
    first, _, rest = vp.partition(" ")
    return f"{_PLURAL_VERB.get(first, first)} {rest}"


def pronoun(kind: str) -> str:
    return "who" if kind == PERSON else "that"


_THE_WORDS = frozenset(
    (
        "Union",
        "Empire",
        "Kingdom",
        "Republic",
        "Academy",
        "Party",
        "Army",
        "Navy",
        "Society",
        "Council",
        "Association",
        "Organisation",
        "Organization",
        "Federation",
        "Confederation",
        "States",
        "Islands",
        "Ocean",
        "Sea",
        "River",
        "Mountains",
        "Alps",
        "War",
        "Revolution",
        "Rebellion",
        "Conference",
        "League",
        "Commission",
        "Parliament",
        "Senate",
        "Institute",
        "Museum",
        "Netherlands",
        "Bahamas",
        "Philippines",
        "Gambia",
        "Emirates",
        "Caribbean",
        "Mediterranean",
        "Coast",
        "Crusade",
        "Dynasty",
        "Caliphate",
        "Church",
        "Battle",
        "Siege",
        "Treaty",
        "Treaties",
        "Assembly",
        "Legion",
        "Corps",
        "Division",
        "Brigade",
        "Order",
        "Nations",
        "House",
        "Representatives",
        "Congress",
        "Court",
        "Cabinet",
        "Ministry",
        "Agency",
        "Bank",
        "Fund",
        "Foundation",
    )
)


def name(node: Named, kind: str = "") -> str:
    """An anchor's name, with "the" where English puts one ("the African Union"); a work's or an
    organisation's title keeps its parenthesis ("Thomas Jefferson (film)" is not the president)."""
    text = display_name(node.name) if kind in (PERSON, PLACE, "") else node.name
    words = text.split()
    if (
        kind != PERSON
        and words
        and "," not in text  # "Apple River, Illinois" is a village's name, not a river
        and words[0] not in ("The", "the")
        and (
            any(w.strip(",") in _THE_WORDS for w in words)
            or words[0] == "University"
            and len(words) > 2
        )
    ):
        return "the " + text
    return text


def value_words(pred: DateIn | NumberIn) -> str:
    if isinstance(pred, DateIn):
        return pred.label
    return range_words(pred.lo, pred.hi)


def described(d: Described) -> str:
    noun = d.noun or KIND_NOUN.get(d.kind, "thing")
    mod = ATTRIBUTES[d.pred.attr][1].format(v=value_words(d.pred))
    return f"{article(noun)} {noun} {mod}"


def target(t: Target, kind: str = "") -> str:
    return name(t, kind) if isinstance(t, Named) else described(t)


def relation_vp(step: Step, other: str, rng: random.Random) -> str:
    """The answer's side of one fact: `other` fills the far end."""
    fwd, inv = RELATIONS[step.relation]
    options = fwd if step.direction == "out" else inv
    template = options[rng.randrange(len(options))]
    return template.format(o=other, s=other)


def chain(steps: tuple[Step, ...], end: Target, rng: random.Random) -> str:
    """A path as nested relative clauses: "was directed by a person who was born in Vienna"."""
    if len(steps) == 1:
        return relation_vp(steps[0], target(end, steps[0].kind), rng)
    kind = steps[0].kind
    noun = KIND_NOUN.get(kind, "thing")
    inner = chain(steps[1:], end, rng)
    head = "someone" if kind == PERSON and rng.random() < 0.5 else f"{article(noun)} {noun}"
    return relation_vp(steps[0], f"{head} {pronoun(kind)} {inner}", rng)


def name_vp(pred: NameInitials | NameStarts) -> str:
    if isinstance(pred, NameStarts):
        return f"has a name that begins with the letter {pred.letter}"
    return f"has the initials {pred.initials.replace('.', '').replace(' ', '')}"


def vp(c: Constraint, answer_kind: str, rng: random.Random) -> str:
    """One constraint as a verb phrase about the answer."""
    if isinstance(c, HasAttr):
        if isinstance(c.pred, DateIn | NumberIn):
            return ATTRIBUTES[c.pred.attr][0].format(v=value_words(c.pred))
        return name_vp(c.pred)
    if isinstance(c, Path):
        return chain(c.steps, c.end, rng)
    if isinstance(c, Not):
        return negate(chain(c.inner.steps, c.inner.end, rng))
    if isinstance(c, CountOf):
        names = [name(a, c.step.kind) for a in c.among]
        quant = f"exactly {number(c.k)} of {coordinate(names)}"
        text = relation_vp(c.step, quant, rng)
        if c.k > 1:  # "is where exactly two of A, B and C were born"
            at = text.index(quant) + len(quant)
            verb, _, rest = text[at:].lstrip().partition(" ")
            if verb in _PLURAL_VERB:
                text = f"{text[:at]} {_PLURAL_VERB[verb]} {rest}".rstrip()
        return text
    if isinstance(c, Compare):
        less, more = ATTRIBUTES[c.attr][2]
        return (less if c.op == "<" else more).format(o=name(c.other, answer_kind))
    if isinstance(c, Extreme):
        least, most = ATTRIBUTES[c.attr][3]
        sup = least if c.mode == "min" else most
        noun = plural(KIND_NOUN.get(answer_kind, "thing"))
        members = pluralise(
            relation_vp(c.group.steps[0], target(c.group.end, c.group.steps[0].kind), rng)
        )
        return f"is {sup} of the {noun} {pronoun(answer_kind)} {members}"
    raise TypeError(f"no phrase for {c!r}")


def _nested(vp_text: str) -> bool:
    return " who " in vp_text or " that " in vp_text


def question(noun: str, answer_kind: str, constraints: list[Constraint], rng: random.Random) -> str:
    """The question: one of several frames around the verb phrases. Phrases with a relative
    clause go last, and two of them are never coordinated (what would "and" attach to?)."""
    vps = [vp(c, answer_kind, rng) for c in constraints if not isinstance(c, IsKind)]
    vps.sort(key=_nested)
    rel = pronoun(answer_kind)
    a = article(noun)
    subject = f"This {noun}" if answer_kind == PERSON else "It"
    frames = []
    if len(vps) <= 3 and sum(map(_nested, vps)) <= 1:
        frames.append(f"Which {noun} {coordinate(vps)}?")
        frames.append(f"Name the {noun} {rel} {coordinate(vps)}.")
    first, rest = vps[0], vps[1:]
    if len(rest) == 1:
        verb, _, tail_rest = rest[0].partition(" ")
        tail = (
            f"{subject} {verb} also {tail_rest}." if verb in _AUX else f"{subject} also {rest[0]}."
        )
    else:
        tail = " ".join(f"{subject} {v}." for v in rest)
    frames.append(f"I am thinking of {a} {noun} {rel} {first}. {tail} Which {noun} is it?")
    ask = "Who is it?" if answer_kind == PERSON else "What is its name?"
    frames.append(f"This {noun} {first}. {tail} {ask}")
    text = frames[rng.randrange(len(frames))]
    # a name ending in an abbreviation ("Washington, D.C.") ends its sentence with one full stop
    text = re.sub(r"(?<!\.)\.\.(?=\s|$)", ".", re.sub(r"\s+", " ", text).strip())
    return text[0].upper() + text[1:]


_ARTIFACTS = (
    ("doubled word", re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)),
    ("article before article", re.compile(r"\b(?:a|an|the) (?:a|an|the)\b", re.IGNORECASE)),
    ("'a' before a vowel", re.compile(r"\ba [aio]\w", re.IGNORECASE)),
    ("'an' before a consonant", re.compile(r"\ban [bcdfgjklmnpqrstvwxyz]\w", re.IGNORECASE)),
    ("spaced ordinal", re.compile(r"\d (?:st|nd|rd|th)\b")),
    ("underscore", re.compile(r"_")),
    ("field name with digits", re.compile(r"\b[a-z]+\d")),
    ("placeholder", re.compile(r"\b[PQRS]\d\b|[{}]")),
    (
        "about Wikipedia's pages",
        re.compile(
            r"\b(?:article|links? to|linked|Wikipedia|web ?page|infobox|category)\b", re.IGNORECASE
        ),
    ),
    ("punctuation", re.compile(r"(?<!\.)\.\.(?!\.)|\s[,.?]|,,|\?\?|(?<![A-Z])\.\?|\s{2}")),
    (
        "lower-case sentence",
        re.compile(r"(?<![A-Z])[.?!] [a-z]"),
    ),  # initials ("L. A. and") excepted
)


def artifacts(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """What a reader would flag in a generated question (the anchors' own names left out)."""
    raw = ["doubled full stop"] if re.search(r"(?<!\.)\.\.(?=\s|$)", text) else []
    for n in sorted(names, key=len, reverse=True):
        text = text.replace(n, "Xname")
    return raw + [what for what, rx in _ARTIFACTS if rx.search(text)]
