"""Token-in/token-out bookkeeping: masks, decoding, template agreement, budgets, reload."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.turns import extract_answer, tool_names

from agent.rollout.models import tiny_model
from agent.rollout.policies.scripted import SearchAnswerPolicy
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import Budget, ChatFormat, Episode, Generation
from agent.rollout.trajectory import read_trajectories, write_trajectories
from wikisim.errors import ConfigError
from wikisim.tools.protocol import format_tool_call

SHORT = Budget(max_new_tokens=24)
TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


@pytest.fixture(scope="module")
def policy() -> TransformersPolicy:
    tok, model = tiny_model(0)
    return TransformersPolicy(
        tok, model, name="tiny", sampling=SamplingConfig(temperature=1.0, batch_size=4)
    )


def _episode(chat: ChatFormat, seed: int, budget: Budget = SHORT) -> Episode:
    return Episode(
        task_id=f"t{seed}",
        question="Which city is the capital of France?",
        system_prompt="You research.",
        tools=TOOLS,
        seed=seed,
        budget=budget,
        chat=chat,
        tools_in_template=True,
    )


def _run(policy, episodes: list[Episode], turns: int) -> None:
    for turn in range(turns):
        live = [e for e in episodes if not e.done]
        for e, g in zip(live, policy.act([e.request() for e in live]), strict=True):
            e.add_generation(g)
            if turn == turns - 1:
                e.finish(terminated=True, truncated=False)
            else:
                e.add_observation(f"result {turn} for {e.task_id}: Paris is the capital.")


def test_masks_cover_exactly_the_policy_tokens(policy: TransformersPolicy) -> None:
    episodes = [_episode(policy.chat, s) for s in range(3)]
    _run(policy, episodes, 3)
    for e in episodes:
        traj = e.trajectory(policy="tiny", reward=0.0, manifest_hash="h")
        ids, mask, lps = traj.token_ids(), traj.loss_mask(), traj.logprobs()
        assert len(ids) == len(mask) == len(lps)
        pos = len(traj.prompt_ids)
        assert mask[:pos] == [0] * pos
        for t in traj.turns:
            assert ids[pos : pos + len(t.ids)] == list(t.ids) and mask[pos : pos + len(t.ids)] == [
                1
            ] * len(t.ids)
            assert lps[pos : pos + len(t.ids)] == list(t.logprobs) and all(
                lp <= 0 for lp in t.logprobs
            )
            pos += len(t.ids)
            assert mask[pos : pos + len(t.observation_ids)] == [0] * len(t.observation_ids)
            pos += len(t.observation_ids)
        assert sum(mask) == sum(len(t.ids) for t in traj.turns) > 0


def test_policy_ids_decode_to_the_turn_text_and_the_context_matches_the_template(
    policy: TransformersPolicy,
) -> None:
    tok = policy.tokenizer
    episodes = [_episode(policy.chat, s) for s in range(2)]
    _run(policy, episodes, 3)
    for e in episodes:
        traj = e.trajectory(policy="tiny", reward=0.0, manifest_hash="h")
        for t in traj.turns:
            assert tok.decode(list(t.ids), skip_special_tokens=False) == t.text
        # everything up to the last observation is exactly what the chat template renders
        upto = traj.turns[:-1]
        ids = list(traj.prompt_ids) + [i for t in upto for i in (*t.ids, *t.observation_ids)]
        msgs = e.messages[: 2 + 2 * len(upto)]
        rendered = tok.apply_chat_template(
            msgs, tools=TOOLS, tokenize=False, add_generation_prompt=True
        )
        assert tok.decode(ids, skip_special_tokens=False) == rendered


def test_text_policy_turns_are_tokenised_once_with_zero_logprobs(
    policy: TransformersPolicy,
) -> None:
    e = _episode(policy.chat, 0, Budget())
    scripted = SearchAnswerPolicy(policy.chat)
    action = e.add_generation(scripted.act([e.request()])[0])
    assert tool_names(action) == ("search",)
    e.add_observation("1. [Paris](https://en.wikipedia.org/wiki/Paris)")
    t = e.turns[0]
    assert policy.tokenizer.decode(list(t.ids)) == action and set(t.logprobs) == {0.0}
    assert e.request().ids == tuple(e.context) and e.request().turn == 1


def test_trajectory_reloads_bit_for_bit(policy: TransformersPolicy, tmp_path: Path) -> None:
    episodes = [_episode(policy.chat, s) for s in range(3)]
    _run(policy, episodes, 2)
    trajs = [
        e.trajectory(
            policy="tiny",
            reward=0.5,
            manifest_hash="h",
            metrics={"em": 0.0},
            timings={"env_s": 0.1},
        )
        for e in episodes
    ]
    path = tmp_path / "t.jsonl"
    write_trajectories(path, trajs)
    back = list(read_trajectories(path))
    assert back == trajs
    assert [b.to_json() for b in back] == [t.to_json() for t in trajs]
    assert (
        back[0].messages()[0]["content"] == "You research."
        and back[0].messages()[2]["role"] == "assistant"
    )


def test_turn_and_context_budgets_truncate_cleanly(policy: TransformersPolicy) -> None:
    e = _episode(policy.chat, 0, Budget(max_turns=2, max_new_tokens=8))
    _run(policy, [e], 5)
    traj = e.trajectory(policy="tiny", reward=0.0, manifest_hash="h")
    assert len(traj.turns) == 2 and traj.truncated and not traj.terminated and traj.answer is None
    prompt_len = len(_episode(policy.chat, 0).prompt_ids)
    small = _episode(policy.chat, 1, Budget(max_context_tokens=prompt_len + 30, max_new_tokens=16))
    _run(policy, [small], 5)
    assert small.truncated and len(small.context) <= prompt_len + 30 + 40
    assert all(len(t.ids) <= 16 for t in small.turns)


def test_a_text_turn_is_held_to_the_token_budget_a_model_stops_at(
    policy: TransformersPolicy,
) -> None:
    """A scripted or teacher turn longer than max_new_tokens is cut there, as a model's would be."""
    e = _episode(policy.chat, 0, Budget(max_new_tokens=12))
    text = format_tool_call("search", {"query": "a long question " * 12})
    action = e.add_generation(Generation(text))
    e.add_observation("error")
    turn = e.trajectory(policy="t", reward=0.0, manifest_hash="h").turns[0]
    assert len(turn.ids) == 12 and text.startswith(action) and len(action) < len(text)
    assert turn.tool_calls == ("?",)  # the cut call never closes
    short = _episode(policy.chat, 1, Budget(max_new_tokens=512))
    assert short.add_generation(Generation(text)) == text


def test_answers_and_calls_are_read_from_turn_text() -> None:
    assert extract_answer("<think>x</think><answer> Paris </answer>") == "Paris"
    assert extract_answer("no answer") is None
    text = (
        format_tool_call("visit", {"url": ["u"], "goal": "g"})
        + '<tool_call>{"name": 3}</tool_call>'
    )
    assert tool_names(text) == ("visit", "?")


def test_generation_and_budget_validate() -> None:
    with pytest.raises(ValueError, match="2 ids but 1 logprobs"):
        Generation("x", (1, 2), (0.0,))
    with pytest.raises(ConfigError, match="max_turns=0"):
        Budget(max_turns=0)
