"""Reproducibility: the same task, seed and actions give byte-identical observations in two runs,
in two processes, and in Sync- and AsyncVectorEnv with 4 workers."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from wikisim.env.core import WikiSimEnv
from wikisim.tools.registry import python_available


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


ACTIONS = [
    call("search", query=["Apollo 8 crew", "Luanda"]),
    call("visit", url="https://en.wikipedia.org/wiki/Apollo_8", goal="who was on the crew"),
    "<tool_call>{broken</tool_call>",
    call("scholar", query="lunar orbit"),
    {
        "name": "visit",
        "arguments": {"url": ["Angola", "Nowhere page"], "goal": "currency and capital"},
    },
    call("search", query="Aldous Huxley novel") + call("visit", url="Aldous Huxley", goal="novels"),
    "<answer>Frank Borman</answer>",
    call("search", query="aardwolf termites"),
]
SCRIPT = """
import hashlib, json, sys
from wikisim.env.core import WikiSimEnv
actions = json.loads(sys.argv[2])
env = WikiSimEnv(index=sys.argv[1], python={python})
obs, _ = env.reset(seed=123)
out = [obs]
for a in actions:
    obs, reward, terminated, truncated, _ = env.step(a)
    out.append(obs + repr((reward, terminated, truncated)))
    if terminated or truncated:
        out.append(env.reset()[0])
print(hashlib.sha256(json.dumps(out).encode()).hexdigest())
"""


def run_episode(env: WikiSimEnv, actions: list) -> list[str]:
    obs, _ = env.reset(seed=123)
    out = [obs]
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        out.append(obs + repr((reward, terminated, truncated)))
        if terminated or truncated:
            out.append(env.reset()[0])
    return out


@pytest.fixture(scope="module")
def actions() -> list:
    extra = (
        [call("python", code="import numpy as np\nprint(np.arange(5).sum() * 7)")]
        if python_available()
        else []
    )
    return ACTIONS[:4] + extra + ACTIONS[4:]


def test_two_runs_are_byte_identical(sample_index: Path, actions: list) -> None:
    first = run_episode(WikiSimEnv(index=sample_index), actions)
    second = run_episode(WikiSimEnv(index=sample_index), actions)
    assert first == second
    assert len(set(first)) == len(first)  # the steps really produced different observations


def test_two_processes_are_byte_identical(sample_index: Path, actions: list) -> None:
    local = hashlib.sha256(
        json.dumps(run_episode(WikiSimEnv(index=sample_index), actions)).encode()
    ).hexdigest()
    code = SCRIPT.format(python="None")
    out = subprocess.run(
        [sys.executable, "-c", code, str(sample_index), json.dumps(actions)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == local


def _vector_stream(vec, steps: list[list]) -> list:
    obs, infos = vec.reset(seed=11)
    stream = [tuple(obs), tuple(infos["task_id"])]
    for batch in steps:
        obs, rewards, terminated, truncated, _ = vec.step(batch)
        stream.append(
            (tuple(obs), tuple(float(r) for r in rewards), tuple(terminated), tuple(truncated))
        )
    vec.close()
    return stream


def test_sync_and_async_vector_envs_agree(sample_index: Path) -> None:
    def make():
        return WikiSimEnv(index=sample_index, python=False)

    # each worker gets a different action at each step (rotated), answers included: autoreset is exercised too
    steps = [[ACTIONS[(i + j) % len(ACTIONS)] for j in range(4)] for i in range(len(ACTIONS) + 2)]
    sync = _vector_stream(SyncVectorEnv([make] * 4), steps)
    async_ = _vector_stream(AsyncVectorEnv([make] * 4, shared_memory=False), steps)
    assert sync == async_
    assert len(set(sync[0])) >= 2  # the four workers got different tasks from their seeds
    single = WikiSimEnv(index=sample_index, python=False)
    assert single.reset(seed=13)[0] == sync[0][2]  # worker 2 was seeded 11 + 2
