"""The research teacher's searches: with known_only, only what a student could type or read."""

from __future__ import annotations

import collections
import json
import random
import re

import pytest

from agent.rollout.react import TurnRequest
from agent.train.teachers import (
    ResearchTeacher,
    broken_search,
    copied,
    evidence_text,
    quote,
    searchable,
    shown_title,
)
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import ConfigError
from wikisim.index.base import Hit
from wikisim.tools.protocol import CallError, parse_turn
from wikisim.tools.search import format_search

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


#: What a first search showed: the novel's page, which names its publisher (no link to it).
SHOWN = (
    "A Google search for 'Grace Krilanovich' found 1 results: ## Web Results 1. [Grace "
    "Krilanovich](https://en.wikipedia.org/wiki/Grace_Krilanovich) Her first novel, The Orange "
    "Eats Creeps, was published by Two Dollar Radio in 2010."
)


def queries(known_only: bool, shown: tuple[str, ...] = ()) -> collections.Counter[str]:
    """The searches of 200 seeds at the turn after the observations `shown` (none: the first)."""
    teacher = ResearchTeacher(TaskSet([TASK], "one"), known_only=known_only)
    queries: collections.Counter[str] = collections.Counter()
    earlier: list[dict[str, str]] = []
    for text in shown:
        earlier += [{"role": "assistant", "content": "..."}, {"role": "user", "content": text}]
    for seed in range(200):
        request = TurnRequest(
            messages=(
                {"role": "system", "content": ""},
                {"role": "user", "content": QUESTION},
                *earlier,
            ),
            ids=(),
            max_new_tokens=96,
            seed=seed,
            turn=len(shown),
        )
        call = re.search(r"<tool_call>\s*(\{.*\})\s*</tool_call>", teacher.turn(request), re.S)
        assert call is not None
        arguments = json.loads(call.group(1))["arguments"]
        if "query" in arguments:  # later turns visit a listed page most of the time
            queries[arguments["query"]] += 1
    return queries


def test_known_only_never_searches_a_title_the_question_does_not_name() -> None:
    known = queries(known_only=True)
    assert UNNAMED not in known
    assert NAMED in known
    assert QUESTION in known  # 25 words: typed whole, the best query a student has
    every = queries(known_only=False)
    assert UNNAMED in every  # the default teacher searches evidence it was never shown
    assert QUESTION not in every  # and types only questions of up to 10 words


def test_known_only_searches_a_title_once_an_observation_shows_it() -> None:
    """The second hop: the publisher the first page names is a query a student can copy."""
    assert UNNAMED in queries(known_only=True, shown=(SHOWN,))
    hidden = SHOWN.replace("Two Dollar Radio", "a small press")
    assert UNNAMED not in queries(known_only=True, shown=(hidden,))
    echoed = f"A Google search for '{UNNAMED}' found 0 results:"  # its own query, not evidence
    assert UNNAMED not in queries(known_only=True, shown=(echoed,))


def test_known_only_takes_the_second_hop_after_reading_the_first_page() -> None:
    """Once the first page is read and names the bridge entity, the next turn searches it."""
    read = (
        "The useful information in https://en.wikipedia.org/wiki/Grace_Krilanovich for user "
        "goal find her novel as follows: Her first novel, The Orange Eats Creeps, was "
        "published by Two Dollar Radio in 2010."
    )
    assert queries(known_only=True, shown=(SHOWN, read))[UNNAMED] >= 140  # of 200 seeds


def test_a_quote_is_cut_at_word_boundaries_around_the_answer() -> None:
    text = (
        "Frank Jeffrey Edson Smart (26 July 1921 - 20 June 2013) was an expatriate Australian "
        "painter known for his precisionist depictions of urban landscapes that are full of "
        "private jokes and playful allusions, and many more words follow to make it long."
    )
    cut = quote("urban landscapes", text)
    assert "urban landscapes" in cut and len(cut) <= 160
    words = text.split()
    assert cut.split()[0] in words and cut.split()[-1] in words  # no word cut in half
    assert quote("Canberra", "It is located in Canberra.") == "It is located in Canberra."


RULED = "This album is by The Matches. It also has a name that begins with the letter D. What is its name?"


def ruled_turn(seed: int, shown: str = "") -> str:
    task = Task("ruled", RULED, ("Decomposer",), ("https://en.wikipedia.org/wiki/The_Matches",))
    earlier = [{"role": "assistant", "content": "..."}, {"role": "user", "content": shown}]
    request = TurnRequest(
        messages=({"role": "system", "content": ""}, {"role": "user", "content": RULED})
        + (tuple(earlier) if shown else ()),
        ids=(),
        max_new_tokens=96,
        seed=seed,
        turn=1 if shown else 0,
    )
    return ResearchTeacher(TaskSet([task], "one"), known_only=True).turn(request)


def test_a_rule_on_the_answer_name_is_not_searched_but_checked_before_answering() -> None:
    """No page states "begins with the letter D": the searches drop it, the answer restates it."""
    assert searchable(RULED) == "This album is by The Matches."
    assert searchable("Which person has the initials PS and produced a work?") == (
        "Which person has the initials PS and produced a work?"  # nothing named: kept whole
    )
    first = [json.loads(re.findall(r"\{.*\}", ruled_turn(s), re.S)[0]) for s in range(50)]
    typed = {c["arguments"]["query"] for c in first} - {RULED}
    assert typed == {"album Matches", "The Matches"}
    read = "The Matches released the albums E. Von Dahl Killed the Locals and Decomposer."
    answer = ruled_turn(0, shown=read)
    assert answer.index('The name must begin with "D".') < answer.index("<answer>Decomposer")


@pytest.mark.parametrize(
    "query", [QUESTION, NAMED, "band formed in Los Angeles", 'the song "Crazy"']
)
def test_a_broken_search_is_one_the_env_refuses_with_an_error(query: str) -> None:
    """Each kind of broken call (looped and never closed, unescaped quotes, a stray bracket)
    runs no tool and answers nothing: the env's observation is an error."""
    tools = {
        "search": {"type": "object", "properties": {"query": {}}, "required": ["query"]},
        "answer": {"type": "object"},
    }
    kinds = ("is never closed", "is not valid JSON")
    errors = set()
    for seed in range(40):
        text = broken_search(query, "Let me search.", random.Random(seed))
        action = parse_turn(text, tools)
        assert action.answer is None and action.items, text
        assert all(isinstance(c, CallError) for c in action.items)
        errors |= {k for c in action.errors for k in kinds if k in c.message}
    assert errors == set(kinds)
    assert evidence_text(f"<tool_response>\nError: the call {query}") == ""
    with pytest.raises(ConfigError, match="recover_share=1"):
        ResearchTeacher(TaskSet([TASK], "one"), recover_share=1)


def test_a_recovering_episode_writes_well_the_search_its_broken_call_meant() -> None:
    teacher = ResearchTeacher(TaskSet([TASK], "one"), known_only=True, recover_share=0.99)
    start = ({"role": "system", "content": ""}, {"role": "user", "content": QUESTION})
    plain = "".join
    for seed in range(20):
        first = TurnRequest(messages=start, ids=(), max_new_tokens=96, seed=seed, turn=0)
        (broken,) = teacher.act([first])
        assert broken.forced
        error = {"role": "user", "content": "<tool_response>\nError: the call is broken."}
        after = TurnRequest(
            messages=(*start, {"role": "assistant", "content": broken.text}, error),
            ids=(),
            max_new_tokens=96,
            seed=seed + 1000,
            turn=1,
        )
        (fixed,) = teacher.act([after])
        assert not fixed.forced
        call = re.search(r"<tool_call>\s*(\{.*\})\s*</tool_call>", fixed.text, re.S)
        assert call is not None
        query = json.loads(call.group(1))["arguments"]["query"]
        assert plain(c for c in query if c not in '"\\') in plain(
            c for c in broken.text if c not in '"\\'
        )


def results(query: str, *titles: str) -> str:
    """A search's observation as the env writes it, one result a title."""
    hits = [
        Hit(
            f"{i}#0",
            t,
            f"https://en.wikipedia.org/wiki/{t.replace(' ', '_')}",
            f"{t} is a page.",
            1.0,
        )
        for i, t in enumerate(titles)
    ]
    return format_search(query, hits)


def copy_turn(question: str, seed: int, shown: tuple[str, ...] = ()) -> dict:
    """The call a copy_queries teacher of two searches makes after the observations `shown`."""
    task = Task("copy", question, ("Columbus",), TASK.evidence)
    earlier = [
        m
        for text in shown
        for m in ({"role": "assistant", "content": "..."}, {"role": "user", "content": text})
    ]
    request = TurnRequest(
        messages=(
            {"role": "system", "content": ""},
            {"role": "user", "content": question},
            *earlier,
        ),
        ids=(),
        max_new_tokens=96,
        seed=seed,
        turn=len(shown),
    )
    teacher = ResearchTeacher(
        TaskSet([task], "one"), known_only=True, min_searches=2, copy_queries=True
    )
    text = teacher.turn(request)
    call = re.search(r"<tool_call>\s*(\{.*\})\s*</tool_call>", text, re.S)
    assert call is not None, text
    return json.loads(call.group(1))


def test_copy_queries_types_the_question_then_a_title_the_results_showed() -> None:
    """copy_queries: one typing a student can copy, not the four phrasings the default mixes: the
    question less its rule on the answer's name (and less its quotes), then the first title of
    the results that the question does not name, whatever the teacher knows of the evidence."""
    assert copied(RULED) == "This album is by The Matches."
    assert (
        copied('Who recorded the song "Crazy" in 1991?') == "Who recorded the song Crazy in 1991?"
    )
    first = {copy_turn(QUESTION, s)["arguments"]["query"] for s in range(50)}
    assert first == {copied(QUESTION)}
    shown = results(copied(QUESTION), NAMED, "Portland, Oregon", UNNAMED)
    second = [copy_turn(QUESTION, s, (shown,)) for s in range(50)]
    # the first title the question does not name, not the evidence page the teacher knows
    assert {c["name"] for c in second} == {"search"}
    assert {c["arguments"]["query"] for c in second} == {"Portland, Oregon"}
    assert shown_title(shown, QUESTION, ["Portland, Oregon"]) == UNNAMED
    assert shown_title(results("x", NAMED), QUESTION, []) == NAMED  # none unnamed: the first
    assert shown_title(results("x", NAMED), QUESTION, [NAMED]) is None
