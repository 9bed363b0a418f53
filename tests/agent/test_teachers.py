"""The research teacher's first search: with known_only, only what a student could type."""

from __future__ import annotations

import json
import re

from agent.rollout.react import TurnRequest
from agent.train.teachers import ResearchTeacher
from wikisim.env.tasks import Task, TaskSet

QUESTION = (
    "The director of the film that Grace Krilanovich's first novel inspired "
    "was born in which city of the state where the novel's publisher is based?"
)
NAMED, UNNAMED = "Grace Krilanovich", "Two Dollar Radio"
TASK = Task(
    "bridge",
    QUESTION,
    ("Columbus",),
    tuple(f"https://en.wikipedia.org/wiki/{t.replace(' ', '_')}" for t in (NAMED, UNNAMED)),
)


def first_queries(known_only: bool) -> set[str]:
    teacher = ResearchTeacher(TaskSet([TASK], "one"), known_only=known_only)
    queries = set()
    for seed in range(200):
        request = TurnRequest(
            messages=({"role": "system", "content": ""}, {"role": "user", "content": QUESTION}),
            ids=(),
            max_new_tokens=96,
            seed=seed,
            turn=0,
        )
        call = re.search(r"<tool_call>\s*(\{.*\})\s*</tool_call>", teacher.turn(request), re.S)
        assert call is not None
        queries.add(json.loads(call.group(1))["arguments"]["query"])
    return queries


def test_known_only_never_searches_a_title_the_question_does_not_name() -> None:
    known = first_queries(known_only=True)
    assert UNNAMED not in known
    assert NAMED in known
    assert QUESTION in known  # 25 words: typed whole, the best query a student has
    every = first_queries(known_only=False)
    assert UNNAMED in every  # the default teacher searches evidence it was never shown
    assert QUESTION not in every  # and types only questions of up to 10 words
