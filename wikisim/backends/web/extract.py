"""The goal-directed extract of a fetched web page, in the spirit of the wiki backend's.

Why: a raw page can be 50k tokens; the agent asked with a goal. We keep the lead and then
the paragraphs that best match the goal (BM25 over the page's own paragraphs), in document
order and under their headings, within the token budget. Pure and deterministic: the same
text and goal give the same extract.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_WORD = re.compile(r"\w+", re.UNICODE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
LEAD_SHARE = 0.3  # of the budget, for the page's opening paragraphs


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _blocks(text: str) -> list[tuple[str, str]]:
    """(heading, paragraph) pairs; headings are markdown '#' lines (Jina and trafilatura write them)."""
    heading, out = "", []
    for raw in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        para = raw.strip()
        if not para:
            continue
        m = _HEADING.match(para.splitlines()[0])
        if m:
            heading = m.group(2).strip()
            rest = "\n".join(para.splitlines()[1:]).strip()
            if not rest:
                continue
            para = rest
        out.append((heading, para))
    return out


def _bm25(
    blocks: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    n = len(blocks)
    avg = sum(len(t) for t in blocks) / n if n else 0
    df = Counter(w for t in blocks for w in set(t))
    scores = []
    for terms in blocks:
        tf = Counter(terms)
        s = 0.0
        for w in set(query):
            if tf[w]:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(terms) / (avg or 1)))
        scores.append(s)
    return scores


def goal_extract(text: str, goal: str, max_tokens: int) -> str:
    """Lead + goal-relevant paragraphs with their headings, within `max_tokens` words."""
    blocks = _blocks(text)
    if not blocks or max_tokens < 1:
        return ""
    sizes = [len(p.split()) for _, p in blocks]
    chosen: set[int] = set()
    used = 0
    for i, size in enumerate(sizes):  # the lead
        if used + size > max(1, int(max_tokens * LEAD_SHARE)) and chosen:
            break
        chosen.add(i)
        used += size
    scores = _bm25([_terms(p) for _, p in blocks], _terms(goal))
    for i in sorted(range(len(blocks)), key=lambda j: (-scores[j], j)):
        if scores[i] <= 0 or used >= max_tokens:
            break
        if i not in chosen and used + sizes[i] <= max_tokens:
            chosen.add(i)
            used += sizes[i]
    lines, last_heading = [], ""
    for i in sorted(chosen):
        heading, para = blocks[i]
        if heading and heading != last_heading:
            lines.append(f"## {heading}")
            last_heading = heading
        words = para.split()
        lines.append(para if len(words) <= max_tokens else " ".join(words[:max_tokens]) + " …")
    return "\n\n".join(lines)
