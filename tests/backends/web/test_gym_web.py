"""The same scripted policy runs on WikiSim-v0 over the wiki and over the (fake) web; the web falls back to the wiki."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import wikisim  # noqa: F401 - registers WikiSim-v0
from wikisim.backends.web import WebBackend

ACTIONS = [
    {"name": "search", "arguments": {"query": ["Anarchism origin of the word"]}},
    {
        "name": "visit",
        "arguments": {
            "url": "https://en.wikipedia.org/wiki/Anarchism",
            "goal": "origin of the word",
        },
    },
    {"name": "scholar", "arguments": {"query": ["anarchism history"]}},
]


def episode(env: gym.Env) -> list[str]:
    obs, _ = env.reset(seed=0)
    observations = [obs]
    for action in ACTIONS:
        text = f"<think>look it up</think>\n<tool_call>{json.dumps(action)}</tool_call>"
        obs, reward, terminated, truncated, _ = env.step(text)
        assert not terminated and not truncated
        observations.append(obs)
    obs, reward, terminated, _, _ = env.step("<answer>unknown</answer>")
    assert terminated and reward in (0.0, 1.0)
    return observations


def test_same_policy_on_wiki_and_web(fake, sample_index, monkeypatch, tmp_path):
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    wiki = episode(gym.make("WikiSim-v0", index=sample_index, python=False).unwrapped)
    web_env = gym.make(
        "WikiSim-v0",
        backend="web",
        python=False,
        backend_kwargs={"cache_path": tmp_path / "web.sqlite"},
    ).unwrapped
    web = episode(web_env)
    assert web[0] == wiki[0]  # the same question
    assert "example.org/anarchism-origin-of-the-word/1" in web[1] and "Wikipedia" not in web[1]
    assert "History" in web[2] and "example.org/anarchism-history" not in web[2]
    assert "A study of anarchism history" in web[3]
    assert fake.calls["serper"] == 2 and fake.calls["jina"] == 1
    web_env.reset(seed=0)
    _, _, _, _, info = web_env.step(
        {"name": "search", "arguments": {"query": "Anarchism origin of the word"}}
    )
    [record] = info["backend_trace"]  # the executor's record of the call reaches step info
    assert (
        record["tool"] == "search"
        and record["outcome"] == "cache"
        and record["provider"] == "cache"
    )
    web_env.backend.close()
    fake.inconsistent = True  # the live web has moved on; the replay must not notice
    replay_env = gym.make(
        "WikiSim-v0",
        backend="web",
        python=False,
        backend_kwargs={"cache_path": tmp_path / "web.sqlite", "cache_mode": "replay-only"},
    ).unwrapped
    assert episode(replay_env) == web  # byte for byte, with no live call
    assert fake.calls["serper"] == 2 and fake.calls["jina"] == 1


def test_web_falls_back_to_the_local_index(fake, sample_index, tmp_path, fast_config):
    from wikisim.backends.wiki import WikiBackend

    wiki = WikiBackend(sample_index, retriever="bm25s")
    web = WebBackend(env=fake.env(), fallback=wiki, config=fast_config, cache_mode="off")
    fake.fail_always("serper", "500")
    fake.fail_always("serpapi", "timeout")
    assert web.search(["Anarchism"], 3) == wiki.search(["Anarchism"], 3)
    [record] = web.trace()
    assert record.provider == "wiki" and [a.provider for a in record.attempts] == [
        "serper",
        "serpapi",
        "wiki",
    ]
    assert record.attempts[1].error.startswith("timeout")


@pytest.mark.parametrize("tool", ["search", "scholar"])
def test_only_uncached_queries_go_to_the_provider(fake, tmp_path, fast_config, tool):
    web = WebBackend(env=fake.env(), config=fast_config, cache_path=tmp_path / "c.sqlite")
    getattr(web, tool)(["alpha"], 3)
    route_calls = fake.calls["serper"]
    both = getattr(web, tool)(["alpha", "beta"], 3)
    assert fake.calls["serper"] == route_calls + 1 and len(both) == 2
