"""Optional paraphrase of template questions through any OpenAI-compatible server.

Why a check: a paraphrase may drop or alter a constraint and so change the answer. Every
anchor name the constraints state, every number, every period word and every negation of
the template must survive, or the template question is kept instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import httpx

from wikisim.errors import BackendError
from wikisim.synth.names import display_name

_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_PERIOD = re.compile(
    r"\b(early|mid|late|first half|second half|spring|summer|autumn|winter|earliest|latest|"
    r"lowest|highest|oldest|youngest|largest|smallest|before|after|more|fewer|exactly|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|million|billion)\b"
)
_NEGATION = re.compile(r"\bnot\b|n't\b")
PROMPT = (
    "Rewrite this puzzle question so it reads naturally. Keep every fact, name, number and "
    "negation exactly; do not add facts; do not reveal an answer. Reply with the question only.\n\n"
)


def key_terms(text: str, names: Iterable[str] = ()) -> list[str]:
    """What a faithful paraphrase must still contain: the anchors' names, numbers, period words."""
    return [
        *names,
        *(n.rstrip(".,") for n in _NUMBER.findall(text)),
        *_PERIOD.findall(text.lower()),
    ]


def anchor_names(constraints: Any) -> list[str]:
    """Display names of every named anchor in a record's constraints (JSON form)."""
    if isinstance(constraints, dict):
        own = [display_name(constraints["name"])] if constraints.get("type") == "Named" else []
        return own + [n for v in constraints.values() for n in anchor_names(v)]
    if isinstance(constraints, list):
        return [n for v in constraints for n in anchor_names(v)]
    return []


def keeps_constraints(template: str, paraphrase: str, names: Iterable[str] = ()) -> bool:
    low = paraphrase.lower()
    if any(t.lower() not in low for t in key_terms(template, names)):
        return False
    return len(_NEGATION.findall(low)) >= len(_NEGATION.findall(template.lower()))


class Rewriter:
    def __init__(self, base_url: str, model: str = "default", timeout: float = 60.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.client = httpx.Client(timeout=timeout)

    def paraphrase(self, question: str) -> str:
        body = {
            "model": self.model,
            "temperature": 0,
            "seed": 0,
            "messages": [{"role": "user", "content": PROMPT + question}],
        }
        try:
            resp = self.client.post(self.url, json=body)
            resp.raise_for_status()
            return resp.json()["choices"][0]["message"]["content"].strip()
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
            raise BackendError(
                f"rewriter at {self.url} failed ({e}); check --rewrite-url and the server"
            ) from e

    def rewrite_all(self, records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """Records with paraphrased questions where the check passes; and how many failed it."""
        out, lost = [], 0
        for r in records:
            text = self.paraphrase(r["question"])
            if keeps_constraints(r["question"], text, anchor_names(r.get("constraints", []))):
                out.append({**r, "question": text, "question_template": r["question"]})
            else:
                lost += 1
                out.append(r)
        return out, lost
