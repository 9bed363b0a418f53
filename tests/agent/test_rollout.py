"""Batched rollouts over real WikiSim-v0 envs: job order, budgets, slot-count independence, JSONL."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from agent.eval.metrics import summarize
from agent.rollout.episodes import jobs_for, make_envs, rollout
from agent.rollout.models import tiny_model
from agent.rollout.policies import OraclePolicy, SearchAnswerPolicy
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import Budget, ChatFormat, TurnRequest
from agent.rollout.trajectory import read_trajectories, write_trajectories
from wikisim.env.tasks import load_tasks

TASKS = load_tasks()
IDS = TASKS.ids()[:8]


def _canon(trajs) -> list[str]:
    return [json.dumps(t.canonical(), sort_keys=True) for t in trajs]


@pytest.fixture(scope="module")
def envs(sample_index: Path):
    return make_envs(4, index=sample_index, tasks=TASKS, max_turns=5)


def test_oracle_solves_every_task_with_real_tool_calls(envs) -> None:
    trajs = rollout(envs, OraclePolicy(TASKS), jobs_for(TASKS.ids(), [0]))
    assert [t.task_id for t in trajs] == TASKS.ids()
    assert all(t.metrics["em"] == 1.0 and t.reward == 1.0 and t.terminated for t in trajs)
    for t, task in zip(trajs, TASKS, strict=True):
        assert [x.tool_calls for x in t.turns] == [("search",)] + [("visit",)] * len(
            task.evidence
        ) + [()]
        assert all("Error" not in x.observation[:40] for x in t.turns[:-1])
        assert t.timings["tool:visit_s"] > 0 and t.manifest_hash == envs[0].unwrapped.manifest_hash


class _VisitByName(SearchAnswerPolicy):
    """Search-answer that first calls visit with a query instead of a URL (seed 2's habit)."""

    def turn(self, request: TurnRequest) -> str:
        if request.turn == 0:
            return '<tool_call>{"name": "visit", "arguments": {"query": "the page"}}</tool_call>'
        return super().turn(dataclasses.replace(request, turn=request.turn - 1))


def test_a_trajectory_counts_the_calls_the_env_could_not_run(envs) -> None:
    clean = rollout(envs, SearchAnswerPolicy(), jobs_for(IDS[:2], [0]))
    assert [t.metrics["malformed"] for t in clean] == [0.0, 0.0]
    trajs = rollout(envs, _VisitByName(), jobs_for(IDS[:2], [0]))
    for t in trajs:
        assert t.turns[0].observation.startswith("<tool_response>\nError")
        assert t.metrics["malformed"] == 1.0 and t.answer is not None
    assert summarize(trajs)["malformed_calls"] == 1.0


def test_results_do_not_depend_on_the_number_of_slots(envs) -> None:
    jobs = jobs_for(IDS, [0, 1])
    four = rollout(envs, SearchAnswerPolicy(), jobs)
    one = rollout(envs[:1], SearchAnswerPolicy(), jobs)
    assert _canon(four) == _canon(one)
    assert [(t.task_id, t.seed) for t in four] == [(j.task_id, j.seed) for j in jobs]


def test_tiny_model_rollout_bookkeeping_and_reload(envs, tmp_path: Path) -> None:
    tok, model = tiny_model(0)
    policy = TransformersPolicy(
        tok, model, name="tiny", sampling=SamplingConfig(temperature=1.0, batch_size=4)
    )
    trajs = rollout(
        envs, policy, jobs_for(IDS[:2], [0, 1]), budget=Budget(max_turns=2, max_new_tokens=12)
    )
    assert len(trajs) == 4 and trajs[0].turns != trajs[1].turns  # seeds differ
    for t in trajs:
        assert t.truncated and not t.terminated and t.answer is None and t.reward == 0.0
        assert len(t.turns) == 2 and sum(t.loss_mask()) == sum(len(x.ids) for x in t.turns)
        assert all(tok.decode(list(x.ids), skip_special_tokens=False) == x.text for x in t.turns)
        assert t.turns[0].observation.startswith("<tool_response>")
    path = tmp_path / "t.jsonl"
    write_trajectories(path, trajs)
    assert list(read_trajectories(path)) == trajs


def test_scripted_turns_get_ids_from_a_given_tokenizer(envs) -> None:
    tok, _ = tiny_model(0)
    trajs = rollout(envs, OraclePolicy(TASKS, ChatFormat(tok)), jobs_for(IDS[:2], [0]))
    for t in trajs:
        assert t.prompt_ids and all(x.ids and set(x.logprobs) == {0.0} for x in t.turns)
        assert tok.decode(t.token_ids()[: len(t.prompt_ids)]).startswith(
            "<|im_start|>system\nYou are a deep research"
        )


class _Spy(SearchAnswerPolicy):
    """The search-answer baseline, keeping every request it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[TurnRequest] = []

    def act(self, requests):
        self.requests += requests
        return super().act(requests)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return [str(value)]


def test_policies_never_see_the_gold_answers(envs) -> None:
    spy = _Spy()
    rollout(envs, spy, jobs_for(TASKS.ids(), [0]))
    assert {f.name for f in dataclasses.fields(TurnRequest)} == {
        "messages",
        "ids",
        "max_new_tokens",
        "seed",
        "turn",
        "tools",
    }
    assert len(spy.requests) > 2 * len(TASKS)
    for request in spy.requests:
        task = TASKS.by_question(request.question)
        # what the env observed may quote the answer; nothing else a policy gets may
        given = [
            request.messages[:2],
            request.tools,
            request.seed,
            request.max_new_tokens,
            request.turn,
        ]
        seen = " ".join(_strings(given)).lower()
        leaked = [
            a
            for a in task.answers
            if a.lower() not in task.question.lower()
            and re.search(rf"\b{re.escape(a.lower())}\b", seen)
        ]
        assert not leaked, (request.task_id, leaked)
