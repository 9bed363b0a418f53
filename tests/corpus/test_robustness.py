"""Bad input: malformed pages are skipped and reported, broken files stop with a clear error."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest

from wikisim.corpus import Page, Redirect, read_pages
from wikisim.corpus.formats import open_input
from wikisim.errors import ConfigError, CorpusError
from wikisim.paths import DATA_DIR, SAMPLE_DUMP

HEAD = '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xml:lang="de">\n'


def _page(title: str, page_id: str, text: str | None, ns: str = "0", extra: str = "") -> str:
    body = "" if text is None else f'<revision><text xml:space="preserve">{text}</text></revision>'
    return f"<page><title>{title}</title><ns>{ns}</ns><id>{page_id}</id>{extra}{body}</page>\n"


def test_truncated_bz2_fails_naming_file_and_last_good_page(tmp_path: Path) -> None:
    data = SAMPLE_DUMP.read_bytes()
    cut = tmp_path / "sample-truncated.xml.bz2"
    cut.write_bytes(data[: len(data) // 2])
    got: list[Page | Redirect] = []
    with pytest.raises(
        CorpusError, match=r"sample-truncated\.xml\.bz2: truncated.*last good page: '"
    ) as e:
        got.extend(read_pages([cut]))
    last = str(e.value).split("last good page: ")[1]
    # every page read before the break came out, the last one is the one the error names
    assert got and last.startswith(repr(getattr(got[-1], "title", None) or got[-1].source))


def test_broken_xml_fails(tmp_path: Path) -> None:
    with bz2.open(SAMPLE_DUMP) as f:
        raw = f.read()
    cut = tmp_path / "sample-broken.xml"
    cut.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(
        CorpusError, match=r"sample-broken\.xml: truncated or broken XML.*last good"
    ):
        list(read_pages([cut], workers=2))


def test_malformed_pages_are_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "mixed.xml"
    path.write_text(
        HEAD
        + _page("Good", "1", "A '''good''' page about [[Cats]].")
        + _page("Bad id", "x1", "text")
        + _page("", "3", "text")
        + _page("No text", "4", None)
        + _page("Empty", "5", "{{stub}}")
        + _page("Talk:Good", "6", "talk", ns="1")
        + _page("Old redirect", "7", "#REDIRECT [[Good]]")
        + "</mediawiki>\n"
    )
    stream = read_pages([path])
    items = list(stream)
    assert items[0].title == "Good" and items[0].text == "A good page about Cats."
    assert items[1] == Redirect("Old redirect", "Good") and len(items) == 2
    rep = stream.report
    assert [(s.title, s.page_id) for s in rep.skipped] == [
        ("Bad id", None),
        ("", 3),
        ("No text", 4),
        ("Empty", 5),
    ]
    assert rep.skipped_by_reason() == {
        "bad page id": 1,
        "empty text": 1,
        "missing title": 1,
        "no revision text": 1,
    }
    assert rep.non_article == 1 and "skipped 4" in str(rep) and "'Bad id'" in str(rep)
    assert rep.as_dict()["skipped"] == 4


def test_non_english_wikitext(tmp_path: Path) -> None:
    text = (
        "{{Infobox Ort in Deutschland\n|Name = Beispielstadt\n|Bundesland = [[Bayern]]\n"
        "|Einwohner = 12.345\n}}\n'''Beispielstadt''' ist eine Stadt in [[Bayern]].&lt;ref&gt;"
        "{{Internetquelle |url=http://x.de |titel=Quelle}}&lt;/ref&gt;\n"
        "[[Datei:Wappen.svg|mini|links|Das [[Wappen]]]]\n== Geschichte ==\n"
        "Gegründet [[1200]].\n[[Bild:Karte.png|thumb]]\n[[Kategorie:Ort in Bayern]]\n"
        "[[en:Example town]]\n{{Navigationsleiste Städte}}"
    )
    path = tmp_path / "dewiki.xml"
    path.write_text(HEAD + _page("Beispielstadt", "9", text) + "</mediawiki>\n", encoding="utf-8")
    (page,) = read_pages([path])
    assert page.infobox is not None and page.infobox.type == "ort in deutschland"
    assert page.infobox.get("Bundesland") == "Bayern"
    assert page.categories == ("Ort in Bayern",)
    assert "Datei" not in page.text and "Wappen" not in page.text and "Example" not in page.text
    assert page.text == "Beispielstadt ist eine Stadt in Bayern.\n\nGeschichte\nGegründet 1200."
    assert [(x.target, x.field) for x in page.links] == [
        ("Bayern", "Bundesland"),
        ("Bayern", ""),
        ("1200", ""),
    ]


@pytest.mark.parametrize(
    ("name", "pages", "redirects"),
    [("enwiki-table-markup.xml.bz2", 5, 0), ("enwiki-20250201-redirects.xml.bz2", 6, 64)],
)
def test_other_dumps_ingest_cleanly(name: str, pages: int, redirects: int) -> None:
    stream = read_pages([DATA_DIR / "dumps" / name])
    items = list(stream)
    assert stream.report.skipped == []
    assert sum(isinstance(x, Page) for x in items) == pages
    assert sum(isinstance(x, Redirect) for x in items) == redirects
    for page in (x for x in items if isinstance(x, Page)):
        assert page.text and "{|" not in page.text and "|}" not in page.text
        assert "{{" not in page.text and "[[" not in page.text


def test_table_rows_read_as_lines() -> None:
    items = list(read_pages([DATA_DIR / "dumps" / "enwiki-table-markup.xml.bz2"]))
    page = next(x for x in items if x.title == "Academy Award for Best Production Design")
    assert "Most Awards | Cedric Gibbons | 11 awards | Awards resulted from 39 nominations." in (
        page.text.split("\n")
    )


def test_multistream_bz2(tmp_path: Path) -> None:
    with bz2.open(SAMPLE_DUMP) as f:
        raw = f.read()
    cut = raw.index(b"  <page>", len(raw) // 2)
    multi = tmp_path / "multistream.xml.bz2"
    multi.write_bytes(bz2.compress(raw[:cut]) + bz2.compress(raw[cut:]))
    raws = list(open_input(multi))
    assert len(raws) == 206 and raws == list(open_input(SAMPLE_DUMP))


def test_workers_give_identical_output() -> None:
    """Several chunks (16 pages each) over two files, parsed by 1 and by 2 processes."""
    inputs = [
        DATA_DIR / "dumps" / "enwiki-20250201-redirects.xml.bz2",
        DATA_DIR / "dumps" / "enwiki-table-markup.xml.bz2",
    ]
    one, two = read_pages(inputs, workers=1), read_pages(inputs, workers=2)
    got = list(two)
    assert len(got) == 75 and got == list(one)
    assert two.report.as_dict() == one.report.as_dict()


def test_workers_validated() -> None:
    with pytest.raises(ConfigError, match="workers=0"):
        read_pages([SAMPLE_DUMP], workers=0)
