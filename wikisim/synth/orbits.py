"""Exact automorphism orbits of small labelled graphs (the 3-8 node subgraphs).

Why orbits: two nodes in one orbit play the same structural role, so a question about
either is the same question shape. Choosing answers per orbit, not per node, spreads
questions evenly over roles instead of over-sampling the many leaves of a star.
"""

from __future__ import annotations

from collections.abc import Hashable

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

_PIN = "_orbit_pin"


def _node_match(node_attr: str):
    return lambda a, b: a.get(node_attr) == b.get(node_attr) and a.get(_PIN) == b.get(_PIN)


def _edge_match(edge_attr: str):
    return lambda a, b: a.get(edge_attr) == b.get(edge_attr)


def maps_to(
    g: nx.Graph, u: Hashable, v: Hashable, node_attr: str = "kind", edge_attr: str = "relation"
) -> bool:
    """True if some label-preserving automorphism of g sends u to v."""
    if u == v:
        return True
    g1, g2 = g.copy(), g.copy()
    g1.nodes[u][_PIN] = True
    g2.nodes[v][_PIN] = True
    return GraphMatcher(
        g1, g2, node_match=_node_match(node_attr), edge_match=_edge_match(edge_attr)
    ).is_isomorphic()


def orbits(
    g: nx.Graph, node_attr: str = "kind", edge_attr: str = "relation"
) -> list[tuple[Hashable, ...]]:
    """The orbits of g's nodes under label-preserving automorphisms, each sorted, in sorted order.

    WL node hashes split nodes into classes that orbits refine (same orbit => same hash); within
    a class one pinned isomorphism test per (node, orbit representative) decides exactly.
    """
    hashes = nx.weisfeiler_lehman_subgraph_hashes(
        g, edge_attr=edge_attr, node_attr=node_attr, iterations=3
    )
    classes: dict[tuple[str, ...], list[Hashable]] = {}
    for n in sorted(g.nodes):
        classes.setdefault(tuple(hashes[n]), []).append(n)
    result: list[tuple[Hashable, ...]] = []
    for members in classes.values():
        found: list[list[Hashable]] = []
        for n in members:
            for orbit in found:
                if maps_to(g, orbit[0], n, node_attr, edge_attr):
                    orbit.append(n)
                    break
            else:
                found.append([n])
        result.extend(tuple(o) for o in found)
    return sorted(result)
