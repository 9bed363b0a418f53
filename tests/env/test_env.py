"""WikiSim-v0: a scripted episode, malformed actions, truncation, registration and the Gymnasium checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import wikisim
from wikisim.env.core import AnyText, WikiSimEnv
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import ConfigError, TaskError
from wikisim.tools.registry import python_available


def call(name: str, **arguments) -> str:
    return f"<think>next step</think>\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture(scope="module")
def env(sample_index: Path) -> WikiSimEnv:
    e = WikiSimEnv(index=sample_index)
    yield e
    e.close()


def test_reset_gives_question_schemas_and_prompt(env: WikiSimEnv) -> None:
    obs, info = env.reset(options={"task_id": "apollo11-commander"})
    assert obs == "Who was the commander of Apollo 11?"
    assert info["task_id"] == "apollo11-commander" and info["version"] == wikisim.__version__
    assert info["manifest_hash"] == env.backend.index.manifest_hash
    names = [s["function"]["name"] for s in info["tools"]]
    assert names[:3] == ["search", "visit", "scholar"] and names[-1] == "answer"
    prompt = info["system_prompt"]
    assert "<tools>\n" in prompt and "<tool_call>" in prompt and "<answer></answer>" in prompt
    assert '"name": "search"' in prompt


def _scripted_episode(env: WikiSimEnv, answer: str) -> tuple[float, list[str], dict]:
    env.reset(options={"task_id": "apollo11-commander"})
    obs, reward, terminated, truncated, info = env.step(
        call("search", query="Apollo 11 landed the first humans on the Moon")
    )
    assert obs.startswith(
        "<tool_response>\nA Google search for 'Apollo 11 landed the first humans on the Moon' found"
    )
    assert info["tool_calls"] == [
        {"name": "search", "arguments": {"query": "Apollo 11 landed the first humans on the Moon"}}
    ]
    assert info["calls"] == 1 and info["errors"] == 0 and info["latency_s"]["search"] >= 0
    assert info["observation_chars"] == len(obs)
    top = re.search(r"^1\. \[(.*?)\]\((.*?)\)$", obs, flags=re.M)
    assert top.group(1) == "Apollo 11"
    obs2, *_, info2 = env.step(call("visit", url=top.group(2), goal="who commanded the mission"))
    assert (
        f"The useful information in {top.group(2)} for user goal who commanded the mission" in obs2
    )
    assert "Neil Armstrong" in obs2 and "# Apollo 11" in obs2
    seen = [obs, obs2]
    if python_available():
        obs3, *_ = env.step(call("python", code="print(1969 - 1930)"))
        assert "39" in obs3
        seen.append(obs3)
    obs4, reward, terminated, truncated, info4 = env.step(
        f"<think>found it</think><answer>{answer}</answer>"
    )
    assert terminated and not truncated and obs4 == ""
    assert info4["episode_calls"] == len(seen)
    return reward, seen, info4


def test_scripted_episode_right_answer_scores_one(env: WikiSimEnv) -> None:
    reward, _, info = _scripted_episode(env, "Neil Armstrong")
    assert reward == 1.0 and info["em"] == 1.0 and info["answer"] == "Neil Armstrong"


def test_scripted_episode_wrong_answer_scores_zero(env: WikiSimEnv) -> None:
    reward, _, info = _scripted_episode(env, "Buzz Aldrin")
    assert reward == 0.0 and info["f1"] == 0.0


MALFORMED = [
    "",
    "plain prose, no tags",
    "<tool_call>{not json}</tool_call>",
    call("serch", query="x"),
    call("search", query=7),
    call("visit", url="Angola"),
    '<tool_call>{"name": "search"}</tool_call>',
    "x" * 1_048_576,
    "bad \udcff surrogate",
    b"\xc3\x28",
    {"name": "visit", "arguments": {"url": 1, "goal": "g"}},
    ["a", "list"],
    "<answer></answer>",
]


def test_malformed_actions_are_observations_and_the_episode_goes_on(env: WikiSimEnv) -> None:
    env.reset(options={"task_id": "angola-capital"})
    for i, action in enumerate(MALFORMED, 1):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs.startswith("<tool_response>\nError: ") and obs.endswith("\n</tool_response>"), (
            action,
            obs,
        )
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["malformed"] == 1 and info["episode_malformed"] == i
    obs, *_ = env.step(call("search", query="Angola capital"))
    assert "[Angola](https://en.wikipedia.org/wiki/Angola)" in obs
    _, reward, terminated, _, _ = env.step({"name": "answer", "arguments": {"answer": "Luanda"}})
    assert reward == 1.0 and terminated


def test_mixed_turn_runs_good_calls_and_reports_bad_ones(env: WikiSimEnv) -> None:
    env.reset(options={"task_id": "angola-capital"})
    obs, _, _, _, info = env.step(
        call("search", query="Luanda")
        + "<tool_call>{]</tool_call>"
        + call("scholar", query="Angola")
    )
    parts = obs.split("\n</tool_response>\n<tool_response>\n")
    assert len(parts) == 3 and "Error: tool call 2 is not valid JSON" in parts[1]
    assert (
        info["calls"] == 2
        and info["malformed"] == 1
        and [c["name"] for c in info["tool_calls"]] == ["search", "scholar"]
    )


def test_visit_unknown_and_foreign_urls_suggest_titles(env: WikiSimEnv) -> None:
    env.reset(options={"task_id": "angola-capital"})
    obs, *_ = env.step(call("visit", url=["https://www.bbc.co.uk/news", "Angolaa"], goal="capital"))
    assert "is not a page of this corpus" in obs and "There is no page titled 'Angolaa'" in obs
    assert "Angola (https://en.wikipedia.org/wiki/Angola)" in obs


def test_truncation_at_max_turns_gives_no_reward(sample_index: Path) -> None:
    e = WikiSimEnv(index=sample_index, max_turns=2, python=False)
    e.reset(options={"task_id": "angola-capital"})
    assert e.step(call("search", query="Angola"))[3] is False
    obs, reward, terminated, truncated, info = e.step(call("search", query="Luanda"))
    assert (reward, terminated, truncated, info["truncation"]) == (0.0, False, True, "max_turns")
    obs, reward, terminated, *_ = e.step("<answer>Luanda</answer>")
    assert reward == 0.0 and "the episode has ended" in obs


def test_truncation_at_observation_budget(sample_index: Path) -> None:
    e = WikiSimEnv(index=sample_index, max_observation_tokens=300, python=False)
    e.reset(options={"task_id": "angola-capital"})
    _, _, _, truncated, info = e.step(call("visit", url="Angola", goal="capital"))
    assert (
        truncated
        and info["truncation"] == "max_observation_tokens"
        and info["observation_tokens_total"] > 300
    )


def test_seeded_reset_is_deterministic_and_covers_tasks(env: WikiSimEnv) -> None:
    first = [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert first == [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert len(set(first)) > 5
    with pytest.raises(TaskError, match="Did you mean"):
        env.reset(options={"task_id": "angola-capitol"})


def test_check_env_passes(env: WikiSimEnv) -> None:
    check_env(env, skip_render_check=True)


def test_spaces_admit_any_text() -> None:
    space = AnyText(100)
    assert space.contains("émoji 🙂 中文 \x00 \u202e") and space.contains("")
    assert (
        not space.contains("lone \ud800")
        and not space.contains(3)
        and not space.contains("x" * 101)
    )
    assert space.contains(space.sample())


def test_config_errors_name_the_fix(sample_index: Path) -> None:
    with pytest.raises(ConfigError, match="EnvConfig.reward='bleu': choose one of em, f1, judge"):
        WikiSimEnv(index=sample_index, reward="bleu")
    with pytest.raises(ConfigError, match="needs judge="):
        WikiSimEnv(index=sample_index, reward="judge")
    with pytest.raises(
        ConfigError, match="EnvConfig.backend='bing': choose one of wiki, remote, web"
    ):
        WikiSimEnv(index=sample_index, backend="bing")


def test_custom_task_set_and_f1_reward(sample_index: Path) -> None:
    tasks = TaskSet([Task("t", "Who wrote Animal Farm?", ("George Orwell",))])
    e = WikiSimEnv(index=sample_index, tasks=tasks, reward="f1", python=False)
    e.reset(seed=3)
    assert e.step("<answer>Orwell</answer>")[1] == pytest.approx(2 / 3)


def test_gym_make_in_a_fresh_interpreter(sample_index: Path, tmp_path: Path) -> None:
    """No arguments: the bundled tasks on the sample index, found in the cache."""
    cache = tmp_path / "cache"
    (cache / "indexes").mkdir(parents=True)
    # the sample built with dense, where the default retriever (hybrid) looks for it
    (cache / "indexes" / "enwiki-2014-sample-dense").symlink_to(sample_index)
    code = (
        "import gymnasium as gym, wikisim\n"
        "env = gym.make('WikiSim-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(info['task_id'], env.unwrapped.manifest_hash)\n"
        "env2 = gym.make('wikisim:WikiSim-v0', python=False)\n"
        "print(env2.reset(seed=0)[1]['task_id'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "WIKISIM_CACHE": str(cache)},
        check=True,
    ).stdout.split()
    assert (
        out[0] == out[2] == WikiSimEnv(index=sample_index, python=False).reset(seed=0)[1]["task_id"]
    )


def test_registered_on_import() -> None:
    assert (
        "WikiSim-v0" in gym.registry
        and gym.registry["WikiSim-v0"].entry_point == "wikisim.env.core:WikiSimEnv"
    )


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not python_available(), reason="the python sandbox is not installed")
def test_hostile_python_is_contained_and_the_episode_goes_on(sample_index: Path) -> None:
    e = WikiSimEnv(index=sample_index, python_limits={"wall_seconds": 1.5, "cpu_seconds": 1})
    e.reset(options={"task_id": "angola-capital"})
    before = set(_children(os.getpid()))
    hostile = {
        "while True: pass": "limit",  # CPU or wall clock, whichever the host hits first
        "import os\nwhile True: os.fork()": "Error",
        "x = bytearray(20 * 2**30)": "MemoryError",
        "open('/tmp/wikisim-escape.txt', 'w').write('x')": "Error",
        "import socket; socket.create_connection(('127.0.0.1', 22))": "Error",
        f"print(open({str(Path(wikisim.__file__))!r}).read())": "Error",
        "import os, signal; os.kill(os.getppid(), signal.SIGKILL)": "Error",
    }
    for code, expected in hostile.items():
        obs, reward, terminated, truncated, _ = e.step(
            {"name": "python", "arguments": {"code": code}}
        )
        assert obs.startswith("<tool_response>\n") and expected in obs, (code, obs[:400])
        assert not (terminated or truncated)
    assert not Path("/tmp/wikisim-escape.txt").exists()
    assert e.step("<answer>Luanda</answer>")[1] == 1.0
    assert set(_children(os.getpid())) <= before  # no stray process left behind
