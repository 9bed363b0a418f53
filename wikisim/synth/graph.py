"""The knowledge graph: pages as typed entities, links as relation-labelled, evidenced edges.

Why a graph of our own instead of a networkx MultiDiGraph: the solver asks "who links to X
with relation R" millions of times; dict-of-sets adjacency keyed by relation answers that in
O(1), and `to_networkx` gives networkx's view for reports and hashing when needed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from wikisim.corpus.page import Page, Redirect, normalize_title
from wikisim.errors import ConfigError
from wikisim.synth.attrs import (
    Date,
    Quantity,
    coarse_kind,
    field_kind,
    fine_type,
    life_dates,
    text_facts,
)

MENTIONS = "mentions"
_EMPTY: set[int] = set()
AttrKind = Literal["date", "number", "string"]


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: AttrKind
    raw: str
    date: Date | None = None
    quantity: Quantity | None = None


@dataclass(frozen=True)
class Entity:
    id: int
    title: str
    url: str
    kind: str  # coarse: one of attrs.KINDS (the WL node label)
    fine_type: str  # e.g. "political philosophy", "settlement": used to obfuscate names
    description: str
    categories: tuple[str, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    length: int = 0
    n_citations: int = 0
    provenance: str = ""  # "seed", "search:<query>" or "visit:<url>" when found by expansion

    def attr(self, name: str) -> Attribute | None:
        return next((a for a in self.attributes if a.name == name), None)


@dataclass(frozen=True)
class Edge:
    """`src`'s page links to (or mentions) `dst`; `sentence` on page `url` is the evidence."""

    src: int
    dst: int
    relation: str
    sentence: str
    url: str
    origin: Literal["link", "mention"] = "link"


@dataclass(frozen=True)
class GraphConfig:
    """How pages become a graph."""

    min_title_chars: int = 3  # titles shorter than this are never matched as mentions

    def __post_init__(self) -> None:
        if self.min_title_chars < 1:
            raise ConfigError(f"GraphConfig.min_title_chars must be >= 1, got {self.min_title_chars}")


@dataclass
class KnowledgeGraph:
    entities: dict[int, Entity] = field(default_factory=dict)
    out: dict[int, dict[str, set[int]]] = field(default_factory=lambda: defaultdict(dict))
    inc: dict[int, dict[str, set[int]]] = field(default_factory=lambda: defaultdict(dict))
    edges: dict[tuple[int, int], dict[str, Edge]] = field(default_factory=dict)
    title_index: dict[str, int] = field(default_factory=dict)  # normalised title or alias -> id
    aliases: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    popularity: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    out_any: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))  # any relation
    inc_any: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    _nbrs: dict[int, frozenset[int]] = field(default_factory=dict, repr=False)  # cache of neighbors()

    def add_entity(self, e: Entity) -> None:
        self.entities[e.id] = e
        self.title_index[normalize_title(e.title)] = e.id

    def add_alias(self, alias: str, target_id: int) -> None:
        key = normalize_title(alias)
        if key and key not in self.title_index:
            self.title_index[key] = target_id
            self.aliases[target_id].append(alias)

    def resolve(self, title: str) -> int | None:
        return self.title_index.get(normalize_title(title))

    def add_edge(self, e: Edge) -> bool:
        """Typed relations replace a plain mention of the same pair; a mention never adds to one."""
        if e.src == e.dst or e.src not in self.entities or e.dst not in self.entities:
            return False
        rels = self.edges.setdefault((e.src, e.dst), {})
        if e.relation in rels or (e.relation == MENTIONS and rels):
            return False
        if e.relation != MENTIONS and MENTIONS in rels:
            del rels[MENTIONS]
            self.out[e.src][MENTIONS].discard(e.dst)
            self.inc[e.dst][MENTIONS].discard(e.src)
        rels[e.relation] = e
        self.out[e.src].setdefault(e.relation, set()).add(e.dst)
        self.inc[e.dst].setdefault(e.relation, set()).add(e.src)
        self.out_any[e.src].add(e.dst)
        self.inc_any[e.dst].add(e.src)
        self._nbrs.pop(e.src, None)
        self._nbrs.pop(e.dst, None)
        return True

    def successors(self, n: int, relation: str | None = None) -> set[int]:
        """Pages n links to (with `relation`, or any). The graph's own set: do not mutate it."""
        if relation is None:
            return self.out_any.get(n, _EMPTY)
        return self.out.get(n, {}).get(relation, _EMPTY)

    def predecessors(self, n: int, relation: str | None = None) -> set[int]:
        """Pages that link to n (with `relation`, or any). The graph's own set: do not mutate it."""
        if relation is None:
            return self.inc_any.get(n, _EMPTY)
        return self.inc.get(n, {}).get(relation, _EMPTY)

    def neighbors(self, n: int) -> frozenset[int]:
        nb = self._nbrs.get(n)
        if nb is None:
            nb = self._nbrs[n] = frozenset(self.successors(n) | self.predecessors(n))
        return nb

    def relations(self, src: int, dst: int) -> dict[str, Edge]:
        return self.edges.get((src, dst), {})

    def n_edges(self) -> int:
        return sum(len(r) for r in self.edges.values())

    def stats(self, n: int) -> dict[str, int]:
        e = self.entities[n]
        return {
            "in_degree": len(self.predecessors(n)),
            "out_degree": len(self.successors(n)),
            "length": e.length,
            "n_attributes": len(e.attributes),
            "n_citations": e.n_citations,
            "popularity": self.popularity.get(n, 0),
        }

    def pair_relations(self, u: int, v: int) -> str:
        """The relations between u and v in either direction, sorted and '|'-joined.

        Direction is dropped so the label does not depend on which node has the lower id.
        """
        return "|".join(sorted(set(self.relations(u, v)) | set(self.relations(v, u))))

    def to_networkx(self) -> nx.Graph:
        """Undirected simple graph, node attr `kind`, edge attr `relation` (see pair_relations)."""
        g = nx.Graph()
        for n in sorted(self.entities):
            g.add_node(n, kind=self.entities[n].kind)
        for (u, v) in sorted(self.edges):
            if self.edges[(u, v)] and not g.has_edge(u, v):
                g.add_edge(u, v, relation=self.pair_relations(u, v))
        return g


def entity_from_page(page: Page, linked_fields: set[str], provenance: str = "") -> Entity:
    """Typed attributes from the infobox (unlinked fields) and the lead's life dates."""
    attrs: list[Attribute] = []
    seen: set[str] = set()
    box_fields: tuple[str, ...] = ()
    if page.infobox is not None:
        box_fields = tuple(k for k, _ in page.infobox.fields)
        for name, value in page.infobox.fields:
            if name in linked_fields or name in seen:
                continue
            parsed = field_kind(name, value)
            if parsed is None:
                continue
            kind, val = parsed
            seen.add(name)
            attrs.append(Attribute(
                name, kind, value,
                date=val if isinstance(val, Date) else None,
                quantity=val if isinstance(val, Quantity) else None,
            ))
    description = page.description or page.text.split("\n", 1)[0][:400]
    lives = life_dates(description)
    for name, d in lives.items():
        if name not in seen:
            seen.add(name)
            attrs.append(Attribute(name, "date", d.iso(), date=d))
    if "birth_date" in lives and "death_date" in lives:
        years = lives["death_date"].year - lives["birth_date"].year
        if 0 < years < 120:  # death year minus birth year, a derived number for numeric ranges
            attrs.append(Attribute("years_lived", "number", str(years), quantity=Quantity(float(years), "years")))
    for name, val in text_facts(page.text).items():
        if name not in seen:
            seen.add(name)
            if isinstance(val, Date):
                attrs.append(Attribute(name, "date", val.iso(), date=val))
            else:
                attrs.append(Attribute(name, "number", f"{val.value:g} {val.unit}".strip(), quantity=val))
    box_type = page.infobox.type if page.infobox is not None else ""
    fine = fine_type(description, box_type)
    return Entity(
        id=page.id, title=page.title, url=page.url,
        kind=coarse_kind(fine, description, bool(lives), box_fields),
        fine_type=fine, description=description[:400], categories=tuple(page.categories),
        attributes=tuple(attrs), length=len(page.text), n_citations=len(page.citations),
        provenance=provenance,
    )


def build_graph(
    pages: Iterable[Page],
    redirects: Iterable[Redirect] = (),
    *,
    include: dict[int, str] | None = None,
    config: GraphConfig | None = None,
) -> KnowledgeGraph:
    """One pass over pages: entities now, links resolved (through redirects) at the end.

    Args:
        pages: the corpus, in a fixed order (PageStore.pages() is in id order).
        redirects: alias -> title, followed when resolving links and kept as aliases.
        include: page id -> provenance, to keep only the pages an expansion found; None keeps all.
    """
    config = config or GraphConfig()
    kg = KnowledgeGraph()
    pending: list[tuple[int, str, str, str, str]] = []  # src, target, field, sentence, url
    for page in pages:
        linked = {ln.field for ln in page.links if ln.field}
        if include is None or page.id in include:
            kg.add_entity(entity_from_page(page, linked, include.get(page.id, "") if include else ""))
        for ln in page.links:
            pending.append((page.id, ln.target, ln.field, ln.sentence, page.url))
    for r in redirects:
        target = kg.resolve(r.target)
        if target is not None:
            kg.add_alias(r.source, target)
    linked_pairs: set[tuple[int, int]] = set()
    for src, target, fld, sentence, url in pending:
        dst = kg.resolve(target)
        if dst is None or dst == src:
            continue
        if (src, dst) not in linked_pairs:
            linked_pairs.add((src, dst))
            kg.popularity[dst] += 1
        kg.add_edge(Edge(src, dst, fld or MENTIONS, sentence, url, "link"))
    return kg
