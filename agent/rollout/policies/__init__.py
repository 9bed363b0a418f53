"""Policies: local transformers models, OpenAI-compatible servers, scripted baselines.

`make_policy(spec)` turns a command-line name into a policy: `search-answer`, `oracle`,
`smollm2`, `tiny` (the from-config test model), `openai:MODEL@BASE_URL`, or a path to a
local model folder.
"""

from __future__ import annotations

from pathlib import Path

from agent.rollout.policies.base import DecodeDtype, Policy
from agent.rollout.policies.scripted import OraclePolicy, SearchAnswerPolicy
from agent.rollout.react import ChatFormat
from wikisim.env.tasks import TaskSet
from wikisim.errors import ConfigError

SCRIPTED = ("search-answer", "oracle")


def make_policy(
    spec: str,
    *,
    temperature: float = 0.0,
    top_p: float = 1.0,
    batch_size: int = 8,
    think_budget: int = 0,
    decode_dtype: DecodeDtype = "float32",
    presence_penalty: float = 0.0,
    tokenizer_path: str | None = None,
    tasks: TaskSet | None = None,
) -> Policy:
    """A policy from its command-line name (see the module docstring).

    Args:
        tasks: the task set the oracle answers (the only policy given gold answers).
        think_budget, decode_dtype: a local model's `SamplingConfig` (others write whole turns).
        presence_penalty: a local model's `SamplingConfig`, or sent to an OpenAI-compatible server.
        tokenizer_path: for text-only policies (scripted, openai), a local model folder whose
            tokenizer gives the trajectories token ids (e.g. for SFT); none: text only.
    """
    chat = _chat(tokenizer_path)
    if spec == "search-answer":
        return SearchAnswerPolicy(chat)
    if spec == "oracle":
        if tasks is None:
            raise ConfigError(
                "the oracle policy needs the task set it answers: make_policy('oracle', tasks=...)"
            )
        return OraclePolicy(tasks, chat)
    if spec.startswith("openai:"):
        from agent.rollout.policies.openai_policy import OpenAIConfig, OpenAIPolicy

        model, _, base_url = spec[len("openai:") :].partition("@")
        if not model or not base_url:
            raise ConfigError(
                f"policy {spec!r}: write openai:MODEL@BASE_URL, e.g. openai:qwen@http://127.0.0.1:8000/v1"
            )
        import os

        config = OpenAIConfig(
            base_url=base_url,
            model=model,
            api_key=os.environ.get("OPENAI_API_KEY"),
            temperature=temperature,
            top_p=top_p,
            presence_penalty=presence_penalty,
            concurrency=batch_size,
        )
        return OpenAIPolicy(config, chat=chat)
    from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy

    sampling = SamplingConfig(
        temperature=temperature,
        top_p=top_p,
        batch_size=batch_size,
        think_budget=think_budget,
        decode_dtype=decode_dtype,
        presence_penalty=presence_penalty,
    )
    if spec == "smollm2":
        return TransformersPolicy.smollm2(sampling=sampling)
    if spec == "tiny":
        from agent.rollout.models import tiny_model

        tokenizer, model = tiny_model(0)
        return TransformersPolicy(tokenizer, model, name="tiny", sampling=sampling)
    if Path(spec).is_dir():
        return TransformersPolicy.from_path(spec, sampling=sampling)
    raise ConfigError(
        f"unknown policy {spec!r}: use one of {', '.join(SCRIPTED)}, smollm2, tiny, "
        "openai:MODEL@BASE_URL, or a local model folder"
    )


def _chat(tokenizer_path: str | None) -> ChatFormat | None:
    if tokenizer_path is None:
        return None
    from transformers import AutoTokenizer

    return ChatFormat(AutoTokenizer.from_pretrained(tokenizer_path, local_files_only=True))


__all__ = ["SCRIPTED", "OraclePolicy", "Policy", "SearchAnswerPolicy", "make_policy"]
