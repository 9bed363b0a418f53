"""Optional paraphrase of template questions through any OpenAI-compatible server.

Why a check: a paraphrase may drop or alter a constraint and so change the answer. Every
quoted name, every number, every period word and every negation of the template must
survive, or the template question is kept instead.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from wikisim.errors import BackendError

_QUOTED = re.compile(r'"([^"]+)"')
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_PERIOD = re.compile(r"\b(early|mid|late|first half|second half|spring|summer|autumn|winter|earliest|latest|"
                     r"lowest|highest|earlier|later|smaller|larger|exactly)\b")
_NEGATION = re.compile(r"\bnot\b|n't\b")
PROMPT = ("Rewrite this puzzle question so it reads naturally. Keep every fact, name, number and "
          "negation exactly; do not add facts; do not reveal an answer. Reply with the question only.\n\n")


def key_terms(text: str) -> list[str]:
    """What a faithful paraphrase must still contain."""
    return [*_QUOTED.findall(text), *(n.rstrip(".,") for n in _NUMBER.findall(text)), *_PERIOD.findall(text)]


def keeps_constraints(template: str, paraphrase: str) -> bool:
    low = paraphrase.lower()
    if any(t.lower() not in low for t in key_terms(template)):
        return False
    return len(_NEGATION.findall(low)) >= len(_NEGATION.findall(template.lower()))


class Rewriter:
    def __init__(self, base_url: str, model: str = "default", timeout: float = 60.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.client = httpx.Client(timeout=timeout)

    def paraphrase(self, question: str) -> str:
        body = {"model": self.model, "temperature": 0, "seed": 0,
                "messages": [{"role": "user", "content": PROMPT + question}]}
        try:
            resp = self.client.post(self.url, json=body)
            resp.raise_for_status()
            return resp.json()["choices"][0]["message"]["content"].strip()
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
            raise BackendError(f"rewriter at {self.url} failed ({e}); check --rewrite-url and the server") from e

    def rewrite_all(self, records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """Records with paraphrased questions where the check passes; and how many failed it."""
        out, lost = [], 0
        for r in records:
            text = self.paraphrase(r["question"])
            if keeps_constraints(r["question"], text):
                out.append({**r, "question": text, "question_template": r["question"]})
            else:
                lost += 1
                out.append(r)
        return out, lost
