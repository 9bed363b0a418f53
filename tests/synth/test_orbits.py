from __future__ import annotations

import networkx as nx

from wikisim.synth.orbits import maps_to, orbits


def labelled(g: nx.Graph, kind: str = "person", relation: str = "mentions") -> nx.Graph:
    nx.set_node_attributes(g, kind, "kind")
    nx.set_edge_attributes(g, relation, "relation")
    return g


def test_path_orbits_pair_the_mirror_images():
    assert orbits(labelled(nx.path_graph(5))) == [(0, 4), (1, 3), (2,)]


def test_star_orbits_are_centre_and_leaves():
    assert orbits(labelled(nx.star_graph(5))) == [(0,), (1, 2, 3, 4, 5)]


def test_cycle_is_one_orbit():
    assert orbits(labelled(nx.cycle_graph(7))) == [tuple(range(7))]


def test_labels_break_symmetry():
    g = labelled(nx.star_graph(3))
    g.nodes[1]["kind"] = "place"
    assert orbits(g) == [(0,), (1,), (2, 3)]
    g.edges[0, 2]["relation"] = "birth_place"
    assert orbits(g) == [(0,), (1,), (2,), (3,)]


def test_orbits_are_exact_where_wl_colours_agree():
    # a hexagon beside two triangles: every node has degree 2, so WL gives all one colour,
    # but no automorphism maps a hexagon node to a triangle node
    g = labelled(nx.disjoint_union_all([nx.cycle_graph(6), nx.cycle_graph(3), nx.cycle_graph(3)]))
    assert orbits(g) == [(0, 1, 2, 3, 4, 5), (6, 7, 8, 9, 10, 11)]
    assert not maps_to(g, 0, 6) and maps_to(g, 6, 9)
