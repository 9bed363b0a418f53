"""Scripted baselines that act through real tool calls: a floor (`search-answer`) and a ceiling (`oracle`).

Both are stateless: the turn index and the observations in the request fully determine the
next turn, so they are deterministic and batch trivially.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from agent.rollout.react import ChatFormat, Generation, TurnRequest
from wikisim.env.tasks import Task, TaskSet
from wikisim.tools.protocol import TOOL_RESPONSE, format_answer, format_tool_call

_URL = re.compile(r"https?://[^\s)\]>\"'<]+")
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SPAN = re.compile(
    r"(?:[A-Z][\w'\-.]*|\d[\d,.]*)(?:\s+(?:of|the|de|von|van|and|[A-Z][\w'\-.]*|\d[\d,.]*))*"
)
_YES_NO = (
    "is ",
    "are ",
    "was ",
    "were ",
    "do ",
    "does ",
    "did ",
    "can ",
    "has ",
    "have ",
    "could ",
)
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
        "that",
        "this",
        "these",
        "those",
        "as",
        "its",
        "it",
        "his",
        "her",
        "their",
        "there",
        "than",
        "then",
        "into",
        "about",
        "after",
        "before",
        "also",
        "many",
        "much",
        "name",
        "named",
    }
)


_NUMERIC_CUES = ("year", "when", "how many", "how much", "how old", "date", "how long")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _stems(text: str) -> set[str]:
    """Crude 4-letter stems so that "open" matches "opened" without a stemmer."""
    return {w[:4] for w in _words(text) - STOPWORDS}


def observations(request: TurnRequest) -> list[str]:
    """Tool responses seen so far, oldest first (user turns after the question)."""
    return [m["content"] for m in request.messages[2:] if m["role"] == "user"]


def best_span(question: str, text: str) -> str:
    """The answer-shaped span of the passage sentence that best matches the question.

    Sentences are scored by shared content-word stems; in the best ones, the first run of
    capitalised words or numbers (numbers only, for when/how-many questions) that does not
    merely repeat the question is the answer.
    """
    q = question.strip().lower()
    if q.startswith(_YES_NO):
        return "yes"
    numeric = any(cue in q for cue in _NUMERIC_CUES)
    qstems = _stems(question)
    body = _URL.sub(" ", text.replace(TOOL_RESPONSE.open, " ").replace(TOOL_RESPONSE.close, " "))
    body = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
    # drop tool boilerplate that echoes the question (e.g. "... for user goal <question> ...")
    sentences = [
        s.strip() for s in _SENTENCE.split(body) if len(s.strip()) > 3 and question.strip() not in s
    ]
    if not sentences:
        return ""
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(qstems & _stems(sentences[i])), i))
    for i in ranked[:3]:
        for m in _SPAN.finditer(sentences[i]):
            if m.start() == 0 and " " not in m.group(0):
                continue  # a lone capitalised first word is usually just the sentence start
            words = re.sub(r"(\s+(of|the|de|von|van|and))+$", "", m.group(0)).strip(" .,").split()
            while words and words[0].lower() in STOPWORDS:
                words.pop(0)
            span = re.sub(r"'s$", "", " ".join(words))
            if numeric and not any(c.isdigit() for c in span):
                continue
            if span and not _words(span) <= _words(question) | STOPWORDS:
                return span
    return sentences[ranked[0]][:100]


class _ScriptedPolicy(ABC):
    """Each request's next turn comes from `turn` alone; the shared part of both baselines."""

    def __init__(self, chat: ChatFormat | None = None):
        self.chat = chat

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        return [Generation(text=self.turn(r)) for r in requests]

    @abstractmethod
    def turn(self, request: TurnRequest) -> str: ...


class SearchAnswerPolicy(_ScriptedPolicy):
    """Search the question, visit the top hit with the question as goal, answer the best span."""

    name = "search-answer"

    def turn(self, request: TurnRequest) -> str:
        question = request.messages[1]["content"]
        seen = observations(request)
        if request.turn == 0:
            return format_tool_call(
                "search", {"query": [question]}, think="Search for the question."
            )
        if request.turn == 1:
            urls = _URL.findall(seen[-1]) if seen else []
            if urls:
                return format_tool_call(
                    "visit", {"url": [urls[0]], "goal": question}, think="Read the top hit."
                )
        return format_answer(
            best_span(question, seen[-1] if seen else ""), think="Answer from the page."
        )


class OraclePolicy(_ScriptedPolicy):
    """Search the question, visit each of the task's evidence pages, then give the gold answer.

    An upper bound for the harness and an SFT teacher: every step is a real tool call, so
    its trajectories show the tool use that leads to the answer. It is the one policy that
    knows the gold, so it is built with the task set and finds each request's task by id.
    """

    name = "oracle"

    def __init__(self, tasks: TaskSet, chat: ChatFormat | None = None):
        super().__init__(chat)
        self.tasks = tasks

    def turn(self, request: TurnRequest) -> str:
        question = request.messages[1]["content"]
        task: Task = self.tasks.by_question(request.question)
        evidence = list(task.evidence)
        if request.turn == 0:
            return format_tool_call(
                "search", {"query": [question]}, think="Find the pages the question is about."
            )
        if request.turn - 1 < len(evidence):
            url = evidence[request.turn - 1]
            return format_tool_call(
                "visit", {"url": [url], "goal": question}, think=f"Read the evidence page {url}."
            )
        return format_answer(task.answers[0], think="The evidence pages give the answer.")
