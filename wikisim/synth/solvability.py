"""Can the questions be solved with the env's own tools, and not by one search?

Why both: a scripted oracle that follows a record's evidence (visit each evidence page; from
each evidence link's source page, the linked entity must be visible in the extract; the
answer page must open) shows the recorded path really leads to the answer through
search/visit. A baseline that searches the question and answers with the top hit shows
the question cannot be shortcut. Both run against any `Backend`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from wikisim.backends.base import Backend
from wikisim.corpus.page import normalize_title, url_to_title
from wikisim.synth.names import display_name


@dataclass(frozen=True)
class SolveRates:
    questions: int
    oracle: float
    search_top1: float
    oracle_failures: dict[str, int]


def oracle_solves(backend: Backend, record: dict[str, Any], max_tokens: int = 2000) -> tuple[bool, str]:
    """Follow the recorded evidence through visit; (solved, why not)."""
    views = {}
    for url in record["evidence"]:
        view = backend.visit(url, record["question"], max_tokens)
        if not view.found:
            return False, "evidence_page_not_found"
        views[url] = view
    for e in record["evidence_edges"]:
        dst_title = next((p["title"] for p in record["evidence_pages"] if p["id"] == e["dst"]), None)
        if dst_title is None:
            return False, "edge_outside_evidence"
        name = display_name(dst_title)
        view = backend.visit(e["url"], name, max_tokens)
        if not view.found or not re.search(re.escape(name), view.extract, re.IGNORECASE):
            return False, "link_not_visible"
    answer = backend.visit(record["answer_url"], record["question"], max_tokens)
    if not answer.found or normalize_title(answer.title) != normalize_title(record["answer"]):
        return False, "answer_page_not_found"
    return True, ""


def search_top1_solves(backend: Backend, record: dict[str, Any]) -> bool:
    hits = backend.search([record["question"]], 1)[0]
    if not hits:
        return False
    title = url_to_title(hits[0].url) or hits[0].title
    gold = {normalize_title(a) for a in record.get("answers", [record["answer"]])}
    return normalize_title(title) in gold


def solve_rates(backend: Backend, records: Iterable[dict[str, Any]]) -> SolveRates:
    n = oracle = top1 = 0
    failures: dict[str, int] = {}
    for r in records:
        n += 1
        ok, why = oracle_solves(backend, r)
        oracle += ok
        if not ok:
            failures[why] = failures.get(why, 0) + 1
        top1 += search_top1_solves(backend, r)
    return SolveRates(n, oracle / n if n else 0.0, top1 / n if n else 0.0, dict(sorted(failures.items())))
