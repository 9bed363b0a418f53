"""Lucene (pyserini) and bm25s rank alike: most of the top 10 agree on HotpotQA-100 questions."""

from __future__ import annotations

import json

from wikisim.index import open_index
from wikisim.index.build import build
from wikisim.paths import QA_DIR


def test_lucene_and_bm25s_agree_on_hotpotqa(tmp_path) -> None:
    out = tmp_path / "hotpotqa"
    build([QA_DIR / "hotpotqa-train-100-corpus.json"], out, dense=False, progress=False)
    index = open_index(out)
    questions = [
        q["question"] for q in json.loads((QA_DIR / "hotpotqa-train-100.json").read_text())
    ]
    assert len(questions) == 100
    lucene = index.retriever("lucene").search(questions, k=10)
    bm25s = index.retriever("bm25s").search(questions, k=10)
    overlaps = [
        len({h.docid for h in a} & {h.docid for h in b}) / 10
        for a, b in zip(lucene, bm25s, strict=True)
    ]
    top1 = sum(a[0].docid == b[0].docid for a, b in zip(lucene, bm25s, strict=True)) / len(
        questions
    )
    mean = sum(overlaps) / len(overlaps)
    print(f"mean top-10 overlap {mean:.3f}, top-1 agreement {top1:.2f}")
    assert mean >= 0.9, f"mean top-10 overlap {mean:.3f}"
    assert top1 >= 0.85, f"top-1 agreement {top1:.2f}"
    assert sum(o >= 0.7 for o in overlaps) >= 90
