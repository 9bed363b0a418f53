"""Cutting a backend's ranking: ties at the cut are broken by docid, however deep they run."""

from __future__ import annotations

from wikisim.index.ranked import cut_at, top_k


def _backend(pairs: list[tuple[str, float]]):
    """A ranking in backend order (score, then an order of its own), and the depths asked of it."""
    order = sorted(pairs, key=lambda ds: (-ds[1], ds[0][::-1]))
    asked: list[int] = []

    def fetch(n: int) -> list[tuple[str, float]]:
        asked.append(n)
        return order[:n]

    return fetch, asked


def test_no_tie_at_the_cut_fetches_one_past_it() -> None:
    fetch, asked = _backend([(f"d{i}", float(10 - i)) for i in range(8)])
    assert cut_at(fetch, 3) == [("d0", 10.0), ("d1", 9.0), ("d2", 8.0)]
    assert asked == [4]


def test_a_long_tie_is_followed_until_it_ends() -> None:
    pairs = [("top", 9.0)] + [(f"t{i:02d}", 5.0) for i in range(20)] + [("low", 1.0)]
    fetch, asked = _backend(pairs)
    assert cut_at(fetch, 3) == top_k(pairs, 3) == [("top", 9.0), ("t00", 5.0), ("t01", 5.0)]
    assert asked == [4, 8, 16, 32]


def test_fewer_results_than_asked() -> None:
    fetch, asked = _backend([("a", 1.0), ("b", 1.0)])
    assert cut_at(fetch, 5) == [("a", 1.0), ("b", 1.0)]
    assert asked == [6]
