"""The TRL adapter: schemas by transformers' own `get_json_schema` (what GRPOTrainer uses), the env's
observations from the tools, the reward from the env's scorer, and GRPO steps on CPU with the tiny model."""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.mark.slow
def test_grpo_trainer_runs_steps_with_the_environment(factory, tmp_path: Path):
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    import trl
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import add_response_schema

    from agent.rollout.models import tiny_model

    tokenizer, model = tiny_model()
    # TRL parses tool calls of the chat templates it knows: ChatML with Qwen2.5's tool turns
    tokenizer.chat_template = (
        Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja"
    ).read_text()
    add_response_schema(tokenizer)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=16,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        seed=0,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(trl_dataset(factory.tasks)[:4]),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "rewards/WikiSimTRLEnv/mean" in h]
    assert (
        trainer.state.global_step == 2 and len(logs) == 2
    )  # the env's get_reward is one of the rewards
    assert all("tools/call_frequency" in h for h in logs)
