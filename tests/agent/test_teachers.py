"""The research teacher searches what it has read: names from the question, bridges from observations."""

from __future__ import annotations

import json
import re

from agent.rollout.react import TurnRequest
from agent.train.teachers import ResearchTeacher, names
from wikisim.env.tasks import Task, TaskSet

QUESTION = "Grace Krilanovich's first novel was published by a house founded in 2005, based where?"
TASK = Task(
    "krilanovich",
    QUESTION,
    ("Columbus, Ohio",),
    (
        "https://en.wikipedia.org/wiki/Grace_Krilanovich",
        "https://en.wikipedia.org/wiki/Two_Dollar_Radio",
    ),
)
# a search result that names the next hop in its text but does not list its page
READ = (
    "<tool_response>\nThe useful information in https://en.wikipedia.org/wiki/Grace_Krilanovich "
    "for user goal find her novel as follows: \n\nEvidence in page: \nHer first novel was "
    "published by Two Dollar Radio in 2010.\n</tool_response>"
)


def request(observations: list[str], seed: int) -> TurnRequest:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": QUESTION}]
    for obs in observations:
        messages += [{"role": "assistant", "content": "..."}, {"role": "user", "content": obs}]
    return TurnRequest(tuple(messages), (), 96, seed, len(observations))


def call(text: str) -> tuple[str, dict]:
    (body,) = re.findall(r"<tool_call>(.*?)</tool_call>", text, re.S)
    parsed = json.loads(body)
    return parsed["name"], parsed["arguments"]


def test_names_are_the_questions_capitalised_runs_and_numbers() -> None:
    assert names(QUESTION) == "Grace Krilanovich's 2005"
    assert names("When was the company founded for which Kathi-Anne Reinstein resigned?") == (
        "Kathi-Anne Reinstein"
    )
    assert names("who wrote it?") == ""


def test_first_searches_never_name_a_page_the_question_does_not() -> None:
    teacher = ResearchTeacher(TaskSet([TASK]))
    queries = {call(teacher.turn(request([], seed)))[1]["query"] for seed in range(40)}
    assert len(queries) >= 3  # several phrasings
    assert not any("Two Dollar Radio" in q for q in queries)


def test_a_page_an_observation_names_is_searched_next_and_only_once() -> None:
    teacher = ResearchTeacher(TaskSet([TASK]))
    tools = [call(teacher.turn(request([READ], seed))) for seed in range(20)]
    assert tools == [("search", {"query": "Two Dollar Radio"})] * 20
    searched = "<tool_response>\nA Google search for 'Two Dollar Radio' found 0 results"
    after = [call(teacher.turn(request([READ, searched], seed))) for seed in range(20)]
    assert all(args.get("query") != "Two Dollar Radio" for _, args in after)
