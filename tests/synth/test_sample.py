from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from wikisim.corpus.page import Infobox, Link, Page
from wikisim.synth.factdb import FactDB, ListSource, build_facts
from wikisim.synth.sample import WL_VERSION, SampleConfig, Sampler, structure_histogram


def _page(pid: int, title: str, *targets: str) -> Page:
    return Page(
        pid,
        title,
        f"{title} is a person.",
        infobox=Infobox("person", ()),
        links=tuple(Link(t, t, f"{title} knows {t}.") for t in targets),
    )


@pytest.fixture()
def triangles(tmp_path: Path) -> FactDB:
    pages = [
        _page(1, "A1", "A2"),
        _page(2, "A2", "A3"),
        _page(3, "A3", "A1"),  # triangle
        _page(4, "B1", "B2"),
        _page(5, "B2", "B3"),
        _page(6, "B3", "B1"),  # the same triangle again
        _page(7, "C1", "C2"),
        _page(8, "C2", "C3"),
        _page(9, "C3"),  # a path
    ]
    return build_facts(ListSource(tuple(pages)), tmp_path / "triangles.sqlite")


def test_wl_dedupe_keeps_one_of_isomorphic_subgraphs(triangles):
    sampler = Sampler(triangles, SampleConfig(min_nodes=3, max_nodes=3, max_walks=300))
    subs = list(sampler.sample(seed=7))
    shapes = sorted(s.cyclic for s in subs)
    assert shapes == [False, True]  # one triangle, one path: isomorphic copies dropped
    assert sampler.stats.duplicates > 100 and sampler.stats.kept == 2
    triangle = next(s for s in subs if s.cyclic)
    assert set(triangle.nodes) in ({1, 2, 3}, {4, 5, 6})
    assert not triangle.typed_cyclic  # its edges are links: no cycle of typed facts
    assert WL_VERSION.startswith(f"networkx-{nx.__version__}")


def test_tree_only_baseline_never_keeps_a_cycle(triangles):
    sampler = Sampler(
        triangles, SampleConfig(min_nodes=3, max_nodes=3, max_walks=300, tree_only=True)
    )
    subs = list(sampler.sample(seed=7))
    assert subs and not any(s.cyclic for s in subs)


def test_sampling_is_a_function_of_the_seed(world):
    a = list(Sampler(world).sample(seed=3, n=10))
    b = list(Sampler(world).sample(seed=3, n=10))
    c = list(Sampler(world).sample(seed=4, n=10))
    assert a == b and a != c
    assert all(3 <= len(s.nodes) <= 8 and nx.is_connected(s.to_networkx(world)) for s in a)
    assert any(rel == "born_in" for s in a for _, _, rel in s.edges)  # typed facts label the edges
    hist = structure_histogram(world, a)
    assert sum(hist["size"].values()) == len(a) == hist["shape"]["tree"] + hist["shape"]["cyclic"]


def _record(edges: list[tuple[int, int]]) -> dict:
    nodes = sorted({n for e in edges for n in e})
    return {
        "subgraph": {
            "nodes": [{"id": n} for n in nodes],
            "edges": [{"u": u, "v": v} for u, v in edges],
        }
    }


def test_shape_hash_ignores_labels_and_ids_but_not_topology():
    from wikisim.synth.report import shape_hash

    path = shape_hash(_record([(1, 2), (2, 3), (3, 4)]))
    assert path == shape_hash(_record([(7, 9), (9, 8), (8, 5)]))
    assert path != shape_hash(_record([(1, 2), (1, 3), (1, 4)]))  # a star
    assert path != shape_hash(_record([(1, 2), (2, 3), (3, 4), (4, 1)]))  # a cycle
