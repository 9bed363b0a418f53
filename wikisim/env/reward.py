"""Answer reward: exact match and token F1 after SQuAD normalisation, or an LLM judge.

Scores take the best over all gold answers. The judge asks any OpenAI-compatible server at
temperature 0 through a cached client, so the same answer is judged the same way every time.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from wikisim.backends.llm import ChatClient
from wikisim.errors import ConfigError

RewardKind = Literal["em", "f1", "judge"]
REWARDS: tuple[str, ...] = ("em", "f1", "judge")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


JUDGE_PROMPT = """Judge whether the predicted answer to the question is correct, given the gold answers.
The prediction is correct if it means the same as one gold answer (allowing for different wording,
units or level of detail that does not change the fact); it is wrong if it differs, hedges between
options, or leaves the question unanswered.

Question: {question}
Gold answers: {golds}
Predicted answer: {prediction}

Reply with exactly one word: CORRECT or INCORRECT."""


class Judge:
    """An LLM judge: 1.0 for CORRECT, 0.0 otherwise (cached by the client)."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def __call__(self, question: str, prediction: str, golds: Sequence[str]) -> float:
        reply = self.client.complete(
            [
                {
                    "role": "user",
                    "content": JUDGE_PROMPT.format(
                        question=question, golds=" | ".join(golds), prediction=prediction
                    ),
                }
            ]
        )
        verdict = re.search(r"\b(INCORRECT|CORRECT)\b", reply.upper())
        return float(verdict is not None and verdict.group(1) == "CORRECT")


def answer_metrics(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    return {"em": exact_match(prediction, golds), "f1": f1_score(prediction, golds)}


def score(
    kind: str, question: str, prediction: str, golds: Sequence[str], judge: Judge | None = None
) -> float:
    if kind == "em":
        return exact_match(prediction, golds)
    if kind == "f1":
        return f1_score(prediction, golds)
    if kind == "judge":
        if judge is None:
            raise ConfigError(
                'reward="judge" needs a judge: pass judge=ChatConfig(base_url=..., model=...)'
            )
        return judge(question, prediction, golds)
    raise ConfigError(f"reward must be one of {REWARDS}, got {kind!r}")
