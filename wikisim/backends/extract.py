"""What `visit` shows of a page: pluggable extractors from (page, passages, goal) to evidence.

The default is deterministic (the lead plus the page's passages ranked by BM25 against the
goal, in page order under their headings, within a token budget). `LLMExtractor` asks any
OpenAI-compatible server instead, as the released agents do, at temperature 0 and cached.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from wikisim.backends.llm import ChatClient
from wikisim.corpus.page import Page
from wikisim.index.passages import Passage
from wikisim.index.small_bm25 import SmallBM25
from wikisim.text import count_tokens, cut_to_tokens


class Extractor(Protocol):
    def __call__(self, page: Page, passages: Sequence[Passage], goal: str, max_tokens: int) -> str:
        """The body after the visit header: 'Evidence in page: ...\\n\\nSummary: ...'."""
        ...


def body(evidence: str, summary: str) -> str:
    return f"Evidence in page: \n{evidence}\n\nSummary: \n{summary}"


def _layout(page: Page, chosen: Sequence[tuple[Passage, str]]) -> str:
    """Passages in page order under their headings; '[...]' marks skipped passages."""
    lines = [f"# {page.title}"]
    last_section, last_n = None, -1
    for passage, text in chosen:
        n = int(passage.docid.rsplit("#", 1)[1])
        if last_n >= 0 and n != last_n + 1:
            lines.append("[...]")
        if passage.section != last_section and passage.section:
            lines.append(f"## {passage.section}")
        lines.append(text)
        last_section, last_n = passage.section, n
    return "\n".join(lines)


class LeadExtractor:
    """The lead (up to `lead_share` of the budget) plus the passages most relevant to the goal."""

    def __init__(self, lead_share: float = 0.35, cache_pages: int = 256) -> None:
        self.lead_share = lead_share
        self.cache_pages = cache_pages
        self._models: OrderedDict[tuple[str, int], SmallBM25] = (
            OrderedDict()
        )  # analysing a page costs more than ranking it

    def _model(self, passages: Sequence[Passage]) -> SmallBM25:
        key = (passages[0].docid, len(passages))
        model = self._models.pop(key, None) or SmallBM25([p.contents for p in passages])
        self._models[key] = model
        if len(self._models) > self.cache_pages:
            self._models.popitem(last=False)
        return model

    def select(
        self, passages: Sequence[Passage], goal: str, max_tokens: int
    ) -> list[tuple[Passage, str]]:
        if not passages:
            return []
        budget = max_tokens - count_tokens(passages[0].title) - 2
        lead_budget = max(1, int(budget * self.lead_share))
        lead = passages[0] if passages[0].section == "" else None
        chosen: dict[int, str] = {}
        if lead is not None:
            chosen[0] = cut_to_tokens(lead.text, lead_budget)
            budget -= count_tokens(chosen[0])
        ranked = self._model(passages).top(goal, len(passages))
        added = False  # the best-ranked passage is cut to fit rather than left out
        for i, _ in ranked:
            if i in chosen:
                continue
            head = count_tokens(passages[i].section) + 2
            cost = count_tokens(passages[i].text) + head
            if cost <= budget:
                chosen[i] = passages[i].text
                budget -= cost
            elif not added and budget - head > 20:
                chosen[i] = cut_to_tokens(passages[i].text, budget - head)
                budget = 0
            added = True
            if budget <= 10:
                break
        return [(passages[i], chosen[i]) for i in sorted(chosen)]

    def __call__(self, page: Page, passages: Sequence[Passage], goal: str, max_tokens: int) -> str:
        evidence = _layout(page, self.select(passages, goal, max_tokens))
        summary = page.description or (passages[0].text.split(". ")[0] if passages else page.title)
        return body(evidence, f"{page.title}: {summary}")


_PROMPT = """Extract what the webpage says about the user's goal.

## Webpage content
{content}

## User goal
{goal}

Reply with one JSON object with the fields "rational" (why the evidence bears on the goal),
"evidence" (the most relevant passages, quoted in full from the page) and "summary" (a short
paragraph that answers the goal as far as the page allows)."""


class LLMExtractor:
    """An LLM summariser over the page's text; unparsable replies fall back to `fallback`."""

    def __init__(
        self, client: ChatClient, max_input_tokens: int = 6000, fallback: Extractor | None = None
    ) -> None:
        self.client = client
        self.max_input_tokens = max_input_tokens
        self.fallback = fallback or LeadExtractor()

    def __call__(self, page: Page, passages: Sequence[Passage], goal: str, max_tokens: int) -> str:
        content = cut_to_tokens(
            _layout(page, [(p, p.text) for p in passages]), self.max_input_tokens
        )
        reply = self.client.complete(
            [{"role": "user", "content": _PROMPT.format(content=content, goal=goal)}]
        )
        match = re.search(r"\{.*\}", reply, flags=re.S)
        try:
            data = json.loads(match.group(0)) if match else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("evidence"), str | list):
            return self.fallback(page, passages, goal, max_tokens)
        evidence = (
            data["evidence"]
            if isinstance(data["evidence"], str)
            else "\n".join(map(str, data["evidence"]))
        )
        summary = str(data.get("summary", ""))
        half = max(1, max_tokens // 2)
        return body(
            cut_to_tokens(evidence, max_tokens - min(half, count_tokens(summary))),
            cut_to_tokens(summary, half),
        )
