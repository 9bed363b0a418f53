"""Every input format is detected from content and read; unknown ones are refused clearly."""

from __future__ import annotations

import bz2
import json
import re
from pathlib import Path

import pytest

from wikisim.corpus import Page, read_pages
from wikisim.corpus.page import normalize_title, title_to_url
from wikisim.errors import CorpusError
from wikisim.paths import DATA_DIR, QA_DIR

WIKIEXTRACTOR = DATA_DIR / "wikiextractor" / "enwiki-2015-sample-articles.txt"
WIKI18 = DATA_DIR / "dumps" / "wiki18-passages-1000.jsonl"


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def test_xml_and_wikiextractor_give_substantially_the_same_text(sample_read) -> None:
    xml = {p.id: p for p in sample_read[0] if isinstance(p, Page)}
    ext = {p.id: p for p in read_pages([WIKIEXTRACTOR])}
    assert set(xml) == set(ext) and len(xml) == 106
    assert all(xml[i].title == ext[i].title for i in xml)
    jaccard, contained = [], []
    for i in xml:
        a, b = _tokens(xml[i].text), _tokens(ext[i].text)
        jaccard.append(len(a & b) / len(a | b))
        contained.append(len(a & b) / min(len(a), len(b)))
    # WikiExtractor drops lists (disambiguation pages), so containment is the strict test
    assert sum(c > 0.8 for c in contained) == 106
    assert sum(j > 0.6 for j in jaccard) >= 80
    anarchism = ext[12]
    assert anarchism.title == "Anarchism" and not anarchism.text.startswith("Anarchism\n")
    assert anarchism.description.startswith("Anarchism is a political philosophy")


def test_wikiextractor_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "wiki_00"
    recs = [
        {
            "id": "12",
            "url": "https://en.wikipedia.org/wiki?curid=12",
            "title": "Anarchism",
            "text": "Anarchism\n\nAnarchism is a political philosophy.\nSecond paragraph.",
        },
        {"id": "25", "url": "u", "title": "Autism", "text": "Autism is a disorder."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    pages = list(read_pages([path]))
    assert [(p.id, p.title) for p in pages] == [(12, "Anarchism"), (25, "Autism")]
    assert pages[0].text == "Anarchism is a political philosophy.\nSecond paragraph."


def test_dpr_jsonl_groups_passages_of_a_title_in_order() -> None:
    stream = read_pages([WIKI18])
    pages = list(stream)
    lines = [json.loads(x) for x in WIKI18.read_text().splitlines()]
    titles = [c["contents"].split("\n", 1)[0].strip('"') for c in lines]
    assert [p.title for p in pages] == list(dict.fromkeys(titles))
    assert stream.report.skipped == [] and len({p.id for p in pages}) == len(pages)
    sierra = next(p for p in pages if p.title == "Sierra Madre, California")
    parts = [
        c["contents"].split("\n", 1)[1]
        for c, t in zip(lines, titles, strict=True)
        if t == "Sierra Madre, California"
    ]
    words = [re.findall(r"\w+", x) for x in sierra.text.split("\n")]
    assert len(parts) > 3 and words == [re.findall(r"\w+", x) for x in parts]


def test_jsonl_title_text_compressed(tmp_path: Path) -> None:
    path = tmp_path / "passages.jsonl.bz2"
    recs = [
        {"id": "a1", "title": "Foo", "text": "First."},
        {"id": "b1", "title": "Bar", "text": "B."},
        {"id": "a2", "title": "Foo", "text": "Second."},
    ]
    path.write_bytes(bz2.compress("".join(json.dumps(r) + "\n" for r in recs).encode()))
    pages = list(read_pages([path]))
    assert [(p.title, p.text) for p in pages] == [("Foo", "First.\nSecond."), ("Bar", "B.")]


def test_hotpotqa_corpus_dict_of_sentences() -> None:
    corpus = json.loads((QA_DIR / "hotpotqa-train-100-corpus.json").read_text())
    pages = list(read_pages([QA_DIR / "hotpotqa-train-100-corpus.json"]))
    assert len(pages) == len(corpus) == 994
    first_title = next(iter(corpus))
    assert pages[0].title == first_title
    assert pages[0].text == " ".join("".join(corpus[first_title]).split())


def test_titles_decode_character_references_as_mediawiki_does() -> None:
    """HotpotQA writes "Lilo &amp; Stitch"; MediaWiki decodes a reference in a title, so the
    page, its URL and a link to it all name "Lilo & Stitch"."""
    pages = {p.title for p in read_pages([QA_DIR / "hotpotqa-train-100-corpus.json"])}
    assert "Lilo & Stitch" in pages and not any("&amp;" in t for t in pages)
    assert normalize_title("35&nbsp;mm_film") == "35 mm film"
    assert normalize_title("Kruskal&ndash;Wallis test") == "Kruskal–Wallis test"
    assert title_to_url("Simon &amp; Simon") == title_to_url("Simon & Simon")
    # only a reference with its semicolon is one: these stay as written
    assert [normalize_title(t) for t in ("AT&T", "Q&amp", "R&B;")] == ["AT&T", "Q&amp", "R&B;"]


def test_musique_corpus_list_groups_repeated_titles() -> None:
    corpus = json.loads((QA_DIR / "musique-train-100-corpus.json").read_text())
    pages = list(read_pages([QA_DIR / "musique-train-100-corpus.json"]))
    titles = list(dict.fromkeys(r["title"] for r in corpus))
    assert [p.title for p in pages] == [t[:1].upper() + t[1:] for t in titles]
    repeated = next(t for t in titles if sum(r["title"] == t for r in corpus) > 1)
    page = pages[titles.index(repeated)]
    assert page.text.count("\n") + 1 >= 2


def test_two_wiki_style_list(tmp_path: Path) -> None:
    path = tmp_path / "2wiki.json"
    path.write_text(
        json.dumps(
            [
                {"title": "Teutberga", "text": "Teutberga was a queen."},
                {"title": "Lothair II", "text": "Lothair II was a king."},
            ]
        )
    )
    pages = list(read_pages([path]))
    assert [p.title for p in pages] == ["Teutberga", "Lothair II"] and pages[1].id == 2


def test_ids_continue_across_inputs_and_titles_are_not_repeated(tmp_path: Path) -> None:
    path = tmp_path / "more.json"
    path.write_text(
        json.dumps(
            [{"title": "Anarchism", "text": "Again."}, {"title": "New page", "text": "Fresh."}]
        )
    )
    stream = read_pages([WIKIEXTRACTOR, path])
    pages = list(stream)
    assert pages[-1].title == "New page" and pages[-1].id == max(p.id for p in pages[:-1]) + 1
    assert [s.title for s in stream.report.skipped] == ["Anarchism"]
    assert stream.report.skipped_by_reason() == {"duplicate title": 1}


@pytest.mark.parametrize(
    "content", [b"hello world\n", b'{"foo": 1}\n', b"<html><body>x</body>", b"\x00\x01binary"]
)
def test_unknown_format_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "input.dat"
    path.write_bytes(content)
    with pytest.raises(CorpusError, match=r"input\.dat.*(unknown format|expected).*MediaWiki XML"):
        list(read_pages([path]))


def test_missing_file_and_bad_jsonl_record(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="nope.xml: cannot open"):
        list(read_pages([tmp_path / "nope.xml"]))
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "1", "contents": "\\"A\\"\\ntext"}\n{"id": "2", "cont": "x"}\n')
    with pytest.raises(CorpusError, match=r"p\.jsonl:2: not a jsonl-contents record"):
        list(read_pages([path]))
