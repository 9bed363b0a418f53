"""The default retriever's third stage: a second sparse query from the best pages' names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikisim.errors import ConfigError
from wikisim.index import open_index
from wikisim.index.hop import SecondHop, bridge_query
from wikisim.index.hybrid import FusionParams, HybridRetriever

QUESTION = (
    "What is the main international airport in the birth place of the director of "
    "The Girl Who Kicked the Hornets' Nest?"
)
FILM = (
    "The Girl Who Kicked the Hornets' Nest is a 2009 Swedish film directed by Daniel Alfredson, "
    "from the novel by Stieg Larsson."
)
CORPUS = {
    "The Girl Who Kicked the Hornets' Nest (film)": [FILM],
    "Tic Tac (film)": ["Tic Tac is a Swedish thriller film directed by Daniel Alfredson."],
    "Stockholm Arlanda Airport": ["Arlanda is the main international airport of Stockholm."],
    "Heathrow Airport": ["Heathrow is the main international airport of London."],
    "Jacksons International Airport": ["Jacksons is the main international airport of Moresby."],
    "Hornet": ["A hornet is a wasp that builds a nest from chewed wood."],
}


@pytest.fixture(scope="module")
def qa(qa_corpus_index):
    return qa_corpus_index("hop", CORPUS)


def test_the_hop_query_is_what_is_left_to_ask_and_what_the_passage_answers() -> None:
    # "director" is not "directed" once stemmed; "The", "is" are stop words; the passage has "Who"
    assert bridge_query(QUESTION, FILM) == (
        "What main international airport birth place director "
        "2009 Swedish Daniel Alfredson Stieg Larsson"
    )
    assert (
        bridge_query("Who directed it?", "Directed by Daniel Alfredson.") == "Who Daniel Alfredson"
    )  # "Directed" is asked


def test_pages_the_hop_finds_gain_the_seed_score_over_their_rank(qa) -> None:
    index, docid = qa
    bm25s = index.retriever("bm25s")
    hop = SecondHop(bm25s, index.require_passages())
    film, tic_tac = docid["The Girl Who Kicked the Hornets' Nest (film)"], docid["Tic Tac (film)"]
    jacksons, heathrow = docid["Jacksons International Airport"], docid["Heathrow Airport"]
    # its own names rank the seed first, then the director's other film, which the question
    # alone does not find, then the airports the question asks for
    assert tic_tac not in dict(bm25s.ranked([QUESTION], 10)[0])
    assert [hit for _, hit in hop.found(QUESTION, film)] == [
        film,
        tic_tac,
        jacksons,
        heathrow,
        docid["Stockholm Arlanda Airport"],
    ]
    out = hop.rerank(QUESTION, [(film, 0.03), (jacksons, 0.02)], 1, 2.0, 3)
    gain = 2.0 * 0.03  # weight times the seed's score, over the rank in the hop's list
    assert dict(out) == pytest.approx(
        {film: 0.03 + gain / 1, tic_tac: gain / 2, jacksons: 0.02 + gain / 3}
    )
    assert [d for d, _ in out] == [film, jacksons, tic_tac]  # Tic Tac enters with its passage


def test_the_stage_is_deterministic_and_can_be_switched_off(qa) -> None:
    index, docid = qa
    ranked = [(d, 1.0 / (i + 1)) for i, d in enumerate(sorted(docid.values()))]
    runs = [
        SecondHop(index.retriever("bm25s"), index.require_passages()).rerank(
            QUESTION, ranked, 2, 1.0, 4
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0] != ranked
    hop = SecondHop(index.retriever("bm25s"), index.require_passages())
    assert hop.rerank(QUESTION, ranked, 0, 1.0, 4) == ranked
    assert hop.rerank(QUESTION, ranked, 2, 0.0, 4) == ranked
    assert hop.rerank(QUESTION, [], 2, 1.0, 4) == []
    for name in ("hop_seeds", "hop_weight", "hop_pages"):
        with pytest.raises(ConfigError, match=f"{name} must be >= 0"):
            FusionParams(**{name: -1})


def test_the_same_ranking_under_two_hash_seeds(qa, tmp_path: Path) -> None:
    index, docid = qa
    ranked = [(d, 1.0 / (i + 1)) for i, d in enumerate(sorted(docid.values()))]
    script = (
        "import json, sys\n"
        "from wikisim.index import open_index\n"
        "from wikisim.index.hop import SecondHop\n"
        "index = open_index(sys.argv[1])\n"
        "hop = SecondHop(index.retriever('bm25s'), index.require_passages())\n"
        "print(json.dumps(hop.rerank(sys.argv[2], json.loads(sys.argv[3]), 3, 1.0, 4)))\n"
    )
    root = index.passages.path.parent
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, str(root), QUESTION, json.dumps(ranked)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] and json.loads(runs[0]) != [list(r) for r in ranked]


def test_hybrid_runs_the_hop_and_can_be_told_not_to(sample_index) -> None:
    index = open_index(sample_index)
    hybrid = index.retriever("hybrid")
    assert isinstance(hybrid, HybridRetriever)
    query = ["which language family did the first grammarian of North Africa suggest"]
    without = HybridRetriever(hybrid.sparse, hybrid.dense, params=FusionParams(hop_seeds=0))
    hopped = hybrid.ranked(query, 10)[0]
    assert hopped == hybrid.ranked(query, 10)[0] and hopped != without.ranked(query, 10)[0]
