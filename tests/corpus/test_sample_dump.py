"""The bundled 2014 sample read end to end: every page accounted for, parts parsed, stored."""

from __future__ import annotations

import bz2
import re
from pathlib import Path

import pytest

from wikisim.corpus import Page, PageStore, PageStoreWriter, Redirect
from wikisim.paths import SAMPLE_DUMP


@pytest.fixture(scope="module")
def sample(sample_read) -> tuple[list[Page | Redirect], object]:
    return sample_read


@pytest.fixture(scope="module")
def store(sample, tmp_path_factory: pytest.TempPathFactory) -> PageStore:
    path = tmp_path_factory.mktemp("store") / "pages.sqlite"
    with PageStoreWriter(path) as writer:
        for item in sample[0]:
            writer.add(item)
    return PageStore(path)


def _pages(items) -> dict[str, Page]:
    return {x.title: x for x in items if isinstance(x, Page)}


def test_every_page_and_redirect_accounted_for(sample) -> None:
    items, report = sample
    with bz2.open(SAMPLE_DUMP) as f:
        raw = f.read().decode()
    n_pages, n_redirects = raw.count("<page>"), raw.count("<redirect ")
    assert (n_pages, n_redirects) == (206, 100)
    pages = [x for x in items if isinstance(x, Page)]
    redirects = [x for x in items if isinstance(x, Redirect)]
    assert len(pages) == n_pages - n_redirects == 106
    # the one page outside the article namespace is a redirect (Wikipedia:..., ns 4)
    assert len(redirects) + report.non_article == n_redirects
    assert report.skipped == [] and report.pages == 106 and report.redirects == 99
    ids = {
        int(m) for m in re.findall(r"<page>\s*<title>[^<]*</title>\s*<ns>0</ns>\s*<id>(\d+)", raw)
    }
    assert {p.id for p in pages} <= ids and len({p.id for p in pages}) == 106
    assert report.wikitext_bytes > 5_000_000


def test_anarchism_links_categories_citations(sample) -> None:
    a = _pages(sample[0])["Anarchism"]
    assert a.url == "https://en.wikipedia.org/wiki/Anarchism"
    assert a.description.startswith("Anarchism is a political philosophy")
    assert len(a.links) > 300
    link = next(x for x in a.links if x.target == "Political philosophy")
    assert link.anchor == "political philosophy" and "Anarchism is a" in link.sentence
    assert "Political ideologies" in a.categories and "Anarchism" in a.categories
    assert len(a.citations) > 50
    assert any(c.authors and c.year and c.title for c in a.citations)
    assert "{{" not in a.text and "<ref" not in a.text and "[[" not in a.text
    assert any(s.title == "Etymology and terminology" and s.level == 2 for s in a.sections)


def test_autism_infobox(sample) -> None:
    box = _pages(sample[0])["Autism"].infobox
    assert box is not None and box.type == "disease"
    assert box.get("DiseasesDB") == "1142" and box.get("field") == "Psychiatry"
    links = [x for x in _pages(sample[0])["Autism"].links if x.field]
    assert any(x.target == "Psychiatry" and x.field == "field" for x in links)


def test_store_round_trip_and_lookups(sample, store: PageStore) -> None:
    pages = _pages(sample[0])
    assert len(store) == 106
    assert all(store.get(p.id) == p for p in pages.values())
    assert all(store.page_text(p.id) == p.text for p in pages.values())
    assert store.page_text(10**9) is None
    assert [t for _, t in store.titles()] == [
        p.title for p in sorted(pages.values(), key=lambda p: p.id)
    ]
    assert store.by_title("anarchism") == pages["Anarchism"]
    assert store.by_title("Ayn_Rand").title == "Ayn Rand"
    # redirects are followed, both ways of spelling
    assert store.by_title("AynRand").title == "Ayn Rand"
    assert store.resolve("https://en.wikipedia.org/wiki/AynRand").title == "Ayn Rand"
    assert store.resolve("http://en.wikipedia.org/wiki?curid=12").title == "Anarchism"
    assert store.resolve_title("AccessibleComputing") is None  # target not in the sample
    assert "AynRand" in store.aliases("Ayn Rand")
    assert store.by_title("No such page at all") is None
    assert store.closest_titles("Anarchsm", 3)[0] == "Anarchism"
    assert store.closest_titles("Ayn Randd", 3)[0] == "Ayn Rand"
    linked = store.links_to("Anarchism")
    assert linked and all(
        link.target in ("Anarchism", *store.aliases("Anarchism")) for _, link in linked
    )
    counts = store.counts()
    assert counts["pages"] == 106 and counts["redirects"] == 99
    assert counts["links"] == sum(len(p.links) for p in pages.values())
    cites = list(store.citations())
    assert len(cites) == counts["citations"] == sum(len(p.citations) for p in pages.values())


def test_store_refuses_overwrite_and_missing(tmp_path: Path) -> None:
    from wikisim.errors import CorpusError, IndexNotBuiltError

    with pytest.raises(IndexNotBuiltError, match="does not exist"):
        PageStore(tmp_path / "missing.sqlite")
    (tmp_path / "x.sqlite").write_bytes(b"")
    with pytest.raises(CorpusError, match="already exists"):
        PageStoreWriter(tmp_path / "x.sqlite")
    with pytest.raises(IndexNotBuiltError):
        PageStore(tmp_path / "x.sqlite")


def test_store_shared_across_threads_and_pickled(sample, store: PageStore) -> None:
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    titles = [p.title for p in _pages(sample[0]).values()]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: store.by_title(t).title, titles * 2))
    assert got == titles * 2
    clone = pickle.loads(pickle.dumps(store))
    assert clone.by_title("Autism") == store.by_title("Autism")


def test_citation_fields(sample) -> None:
    cites = {c.title: c for c in _pages(sample[0])["Autism"].citations}
    adult = cites["Adult outcome for children with autism"]
    assert adult.authors == ("Howlin P", "Goode S", "Hutton J", "Rutter M")
    assert (adult.year, adult.venue) == (2004, "J Child Psychol Psychiatry")
    assert adult.doi == "10.1111/j.1469-7610.2004.00215.x"
    assert cites["ASD Data and Statistics"].url == "http://www.cdc.gov/ncbddd/autism/data.html"
