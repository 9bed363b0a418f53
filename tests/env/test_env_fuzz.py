"""Fuzz: thousands of random and mutated actions, and not one exception out of `step`."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from agent.rollout.react import Budget, Episode, Generation
from wikisim.env.core import WikiSimEnv
from wikisim.tools.protocol import call_names, parse_turn, tool_parameters

TEMPLATES = [
    '<think>x</think>\n<tool_call>\n{"name": "search", "arguments": {"query": ["Angola", "Apollo 11"]}}\n</tool_call>',
    '<tool_call>{"name": "visit", "arguments": {"url": "https://en.wikipedia.org/wiki/Alberta", "goal": "capital"}}</tool_call>',
    '<tool_call>{"name": "scholar", "arguments": {"query": "anthropology"}}</tool_call>',
    '<tool_call>{"name": "PythonInterpreter", "arguments": {}}\n<code>print(1)</code></tool_call>',
    "<think>done</think><answer>Luanda</answer>",
    '<tool_call>{"name": "answer", "arguments": {"answer": "Edmonton"}}</tool_call>',
]
PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<answer>",
    "</answer>",
    "<think>",
    "</think>",
    "<code>",
    "</code>",
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "\\",
    "\ud800",
    "\udfff",
    "\x00",
    "\u202e",
    "🙂",
    "\n",
    "null",
    "name",
    "arguments",
]
NAMES = [
    "search",
    "visit",
    "scholar",
    "answer",
    "python",
    "PythonInterpreter",
    "google_scholar",
    "",
    "x" * 300,
    "Search",
]


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2**70, 1.5, float("inf")])
    if kind in (2, 3, 4):
        return "".join(rng.choice(PIECES + list("abc Angola")) for _ in range(rng.randrange(12)))
    if kind in (5, 6):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        rng.choice(
            ["name", "arguments", "query", "url", "goal", "answer", "code", "k"]
        ): random_value(rng, depth + 1)
        for _ in range(rng.randrange(4))
    }


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randrange(1, 5)):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(4)
        if op == 0:
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif op == 1:
            text = text[:i] + text[i + rng.randrange(1, 20) :]
        elif op == 2:
            text = text[:i] + text[i : i + 30] * rng.randrange(2, 4) + text[i + 30 :]
        else:
            text = text[:i]
    return text


def random_action(rng: random.Random):
    kind = rng.randrange(6)
    if kind == 0:
        return "".join(rng.choice(PIECES + list("abcxyz 12")) for _ in range(rng.randrange(200)))
    if kind in (1, 2):
        return mutate(rng, rng.choice(TEMPLATES))
    if kind == 3:
        return random_value(rng)
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(50)))
    args = (
        random_value(rng)
        if rng.random() < 0.3
        else {
            k: random_value(rng) for k in rng.sample(["query", "url", "goal", "answer", "code"], 2)
        }
    )
    call = {"name": rng.choice(NAMES), "arguments": args}
    return f"<tool_call>{json.dumps(call)}</tool_call>" if rng.random() < 0.5 else call


def test_thousands_of_random_actions_never_raise(sample_index: Path) -> None:
    env = WikiSimEnv(index=str(sample_index), python=False, max_turns=25)
    rng = random.Random(20260)
    env.reset(seed=0)
    kinds = {"error": 0, "ok": 0, "end": 0}
    start = time.perf_counter()
    for _ in range(3000):
        action = random_action(rng)
        obs, reward, terminated, truncated, info = env.step(action)
        assert (
            isinstance(obs, str)
            and isinstance(reward, float)
            and env.observation_space.contains(obs)
        )
        kinds["error" if info.get("errors") else "ok"] += 1
        if terminated or truncated:
            kinds["end"] += 1
            env.reset()
    assert min(kinds.values()) > 20, (
        kinds
    )  # the fuzz reached errors, working calls and episode ends
    assert time.perf_counter() - start < 60


def test_env_and_agent_read_every_turn_the_same_way(sample_index: Path) -> None:
    """The env scores a turn and the agent records it through the one parser: thousands of fuzzed
    turns, and each time the same answer, the same calls and the same malformed count."""
    env = WikiSimEnv(index=str(sample_index), python=False, max_turns=1000)
    rng = random.Random(7)
    question, info = env.reset(seed=0)
    tools = tool_parameters(info["tools"])
    compared = {"answer": 0, "calls": 0, "malformed": 0}
    for n in range(2500):
        action = (
            rng.choice(TEMPLATES) if rng.random() < 0.1 else random_action(rng)
        )  # some well-formed turns too
        if not isinstance(action, str):
            continue
        episode = Episode(
            task_id=info["task_id"],
            question=question,
            system_prompt="s",
            tools=info["tools"],
            seed=n,
            budget=Budget(max_turns=2),
        )
        text = episode.add_generation(Generation(action))
        reading = parse_turn(text, tools)
        obs, _, terminated, truncated, step_info = env.step(text)
        if terminated:
            episode.finish(terminated=True, truncated=False)
            assert reading.answer == step_info["answer"]
            assert (
                episode.trajectory(policy="p", reward=0.0, manifest_hash="").answer
                == step_info["answer"]
            )
            compared["answer"] += 1
            question, info = env.reset(seed=n)
            continue
        episode.add_observation(obs)
        assert reading.answer is None
        assert [c.name for c in reading.calls] == [c["name"] for c in step_info["tool_calls"]]
        assert len(reading.errors) == step_info["malformed"]
        assert episode.turns[0].tool_calls == call_names(reading)
        compared["calls"] += bool(reading.calls)
        compared["malformed"] += bool(reading.errors)
    assert min(compared.values()) > 50, compared
