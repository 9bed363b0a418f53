"""The TRL adapter: schemas by transformers' own `get_json_schema` (what GRPOTrainer uses), the env's
observations from the tools, the reward from the env's scorer. GRPO steps with TRL's GRPOTrainer on CPU
run in test_readme_recipes.py (the README's TRL recipe, with the tiny model)."""

from __future__ import annotations

import pytest
from transformers.utils import get_json_schema

from wikisim.backends.wiki import WikiBackend
from wikisim.errors import TaskError
from wikisim.integrations.trl_env import environment_factory, trl_dataset
from wikisim.tools.registry import default_toolbox


@pytest.fixture(scope="module")
def factory(sample_index):
    return environment_factory(index=sample_index)


def test_tool_schemas_by_transformers_match_the_env(factory):
    env = factory()
    env_schemas = {
        s["function"]["name"]: s["function"]["parameters"] for s in factory.toolbox.schemas
    }
    for method in (env.search, env.visit, env.scholar):
        schema = get_json_schema(method)["function"]
        assert schema["parameters"]["required"] == env_schemas[schema["name"]]["required"]
        assert set(schema["parameters"]["properties"]) == set(
            env_schemas[schema["name"]]["properties"]
        )
        assert all(
            p["type"] == "string" and p["description"]
            for p in schema["parameters"]["properties"].values()
        )
    assert get_json_schema(env.answer)["function"]["parameters"]["required"] == ["answer"]


def test_tools_answer_with_the_env_observations_and_reward_scores_the_answer(factory, sample_index):
    toolbox = default_toolbox(WikiBackend(sample_index), python=False)
    env = factory()
    with pytest.raises(TaskError, match="get_reward"):
        env.get_reward()
    row = trl_dataset(factory.tasks)[0]
    assert (
        set(row) == {"prompt", "task_id"}
        and row["prompt"][0]["content"] == factory.tasks[0].question
    )
    assert env.reset(**row) is None and env.get_reward() == 0.0
    assert env.search("Apollo 11") == toolbox.call("search", {"query": "Apollo 11"}).text
    goal = "who commanded the mission"
    assert (
        env.visit("Apollo 11", goal)
        == toolbox.call("visit", {"url": "Apollo 11", "goal": goal}).text
    )
    assert env.scholar("history") == toolbox.call("scholar", {"query": "history"}).text
    assert env.answer("a wrong answer") == "Answer recorded." and env.get_reward() == 0.0
    env.answer(factory.tasks[0].answers[0])
    assert env.get_reward() == 1.0
    env.reset(**row)
    assert env.get_reward() == 0.0
    with pytest.raises(TaskError, match="task_id"):
        env.reset(prompt=row["prompt"])
