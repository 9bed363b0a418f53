"""The default retriever's second stage: pages the best pages name or link to move up."""

from __future__ import annotations

import itertools

import pytest

from wikisim.corpus.store import NAMES_PER_STATEMENT
from wikisim.errors import ConfigError
from wikisim.index import open_index
from wikisim.index.expand import PageExpander, mentioned, name_spans
from wikisim.index.hybrid import FusionParams, HybridRetriever

CORPUS = {
    "Hello Love (song)": ["Hello Love is a song recorded by Hank Snow in 1974. Love is its theme."],
    "Hank Snow": ["Clarence Eugene Snow was a country singer who died in Madison, Tennessee."],
    "Love": ["Love is a feeling of strong attachment."],
    "Publix": ["Publix is a supermarket chain with stores in Florida and Tennessee."],
    "Tennessee": ["Tennessee is a state of the United States; Nashville is its capital."],
}


@pytest.fixture(scope="module")
def qa(qa_corpus_index):
    """A corpus with no links (a QA set's paragraphs): mentions are found by title alone."""
    return qa_corpus_index("expand", CORPUS)


def test_a_page_a_top_passage_names_is_promoted_from_outside_the_list(qa) -> None:
    index, docid = qa
    expander = PageExpander(index.require_passages(), index.store)
    ranked = [(docid["Hello Love (song)"], 0.03), (docid["Publix"], 0.02), (docid["Love"], 0.01)]
    out = expander.rerank("who sang hello love", ranked, 1, 1.0, 0.0)
    # "Hello Love" names Hank Snow and, in its second sentence, Love
    assert expander.points_to(docid["Hello Love (song)"]) == tuple(
        sorted(int(docid[t].split("#")[0]) for t in ("Hank Snow", "Love"))
    )
    gain = 1.0 * 0.03 / 2  # the best page's score, split between the two pages it names
    assert dict(out) == pytest.approx(
        {
            docid["Hello Love (song)"]: 0.03,
            docid["Hank Snow"]: gain,  # not in the fused list: enters with its lead passage
            docid["Publix"]: 0.02,
            docid["Love"]: 0.01 + gain,
        }
    )
    assert [d for d, _ in out] == [
        docid["Hello Love (song)"],
        docid["Love"],
        docid["Publix"],
        docid["Hank Snow"],
    ]
    assert expander.rerank("who sang hello love", ranked, 0, 2.0, 0.0) == ranked


def test_a_page_the_question_names_gains_a_share_of_the_best_score(qa) -> None:
    index, docid = qa
    expander = PageExpander(index.require_passages(), index.store)
    ranked = [(docid["Publix"], 0.02), (docid["Tennessee"], 0.01)]
    out = dict(expander.rerank("How many Publix stores are in Tennessee?", ranked, 0, 2.0, 0.5))
    assert out == pytest.approx({docid["Publix"]: 0.03, docid["Tennessee"]: 0.02})


def test_the_stage_is_deterministic_and_a_no_op_without_a_page_store(qa) -> None:
    index, docid = qa
    passages = index.require_passages()
    ranked = [(d, 1.0 / (i + 1)) for i, d in enumerate(sorted(docid.values()))]
    runs = [
        PageExpander(passages, index.store).rerank("hello love tennessee", ranked, 3, 2.0, 0.5)
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0] != ranked
    assert PageExpander(passages, None).rerank("hello love", ranked, 3, 2.0, 0.5) == ranked


def test_names_are_found_by_title_redirect_or_title_less_its_qualifier(qa) -> None:
    index, docid = qa
    page = {t: int(d.split("#")[0]) for t, d in docid.items()}
    # leftmost-longest: "Hello Love" is the song's page and not also a mention of "Love"
    assert mentioned(index.store, "Hello Love is a song") == {page["Hello Love (song)"]}
    assert mentioned(index.store, "HANK SNOW and Love") == {page["Hank Snow"], page["Love"]}
    assert mentioned(index.store, "a love song in tennessee") == set()  # names start capitalised
    assert name_spans("The 1930 Tennessee") == [
        (0, ["", "", "the 1930 tennessee"]),  # "The", "The 1930": stop words and numbers
        (1, ["", "1930 tennessee"]),
        (2, ["tennessee"]),
    ]


def test_links_whose_anchor_a_passage_contains_are_followed(sample_index) -> None:
    """The sample's pages carry links: "Afroasiatic" in an Algeria passage names a page titled otherwise."""
    index = open_index(sample_index)
    expander = PageExpander(index.require_passages(), index.store)
    target = index.store.by_title("Afroasiatic languages")
    assert target is not None
    passage = next(p for p in index.store.links_from(358) if p.target == target.title)
    assert passage.anchor == "Afroasiatic"
    assert target.id in expander.points_to("358#11")
    lead = index.require_passages().get("358#11")
    assert lead is not None and target.id not in mentioned(index.store, lead.text)


def test_a_redirect_names_its_target(sample_index) -> None:
    store = open_index(sample_index).store
    redirect = next(r for r in store.redirects() if store.by_title(r.target) is not None)
    target = store.by_title(redirect.target)
    assert target is not None
    named = store.pages_named([redirect.source.lower(), "no such page"], qualified=False)
    assert named == {redirect.source.lower(): (target.id,)}


def test_hybrid_runs_the_stage_and_can_be_told_not_to(sample_index) -> None:
    index = open_index(sample_index)
    hybrid = index.retriever("hybrid")
    assert isinstance(hybrid, HybridRetriever)
    query = ["which language family did the first grammarian of North Africa suggest"]
    plain = HybridRetriever(
        hybrid.sparse, hybrid.dense, params=FusionParams(expand_top=0, hop_seeds=0)
    )
    fused = plain.ranked(query, 10)[0]
    expanded = hybrid.ranked(query, 10)[0]
    assert expanded == hybrid.ranked(query, 10)[0] and expanded != fused
    with pytest.raises(ConfigError, match="expand_top must be >= 0"):
        FusionParams(expand_top=-1)


def test_names_looked_up_in_batches_find_what_they_find_one_by_one(sample_index) -> None:
    index = open_index(sample_index)
    store = index.store
    titles = [title.lower() for _, title in store.titles()]
    texts = [p.text for p in itertools.islice(index.require_passages(), 20)]
    spans = [s for text in texts for _, spans in name_spans(text) for s in spans if s]
    names = [*titles, *(t.split(" (")[0] for t in titles if " (" in t), *spans, "no such page"]
    assert len(dict.fromkeys(names)) > 2 * NAMES_PER_STATEMENT
    one_by_one: dict[str, tuple[int, ...]] = {}
    for name in names:
        one_by_one.update(store.pages_named([name]))
    batched = store.pages_named(names)
    assert batched == one_by_one and list(batched) == list(one_by_one)
