"""The ReAct turn format of WebSailor-V2 / Tongyi DeepResearch, with token-in/token-out bookkeeping.

The turn itself (tags, formatting, the parser) is `wikisim.tools.protocol`'s; the env's
observation, already wrapped in `<tool_response>`, comes back as a user turn. Everything is
rendered by the tokenizer's own chat template.

Token bookkeeping: the ids a policy sampled are kept exactly, never re-tokenised from text
(re-tokenisation drift breaks importance ratios in RL). Only the text *between* policy turns
(end-of-turn marker, the tool response turn, the next generation prompt) is tokenised, and it
is derived from the chat template by rendering a placeholder conversation, so any ChatML-like
template works unchanged.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.rollout.trajectory import Trajectory, Turn
from wikisim import __version__
from wikisim.checks import at_least
from wikisim.env.config import EnvConfig
from wikisim.errors import ConfigError
from wikisim.tools.protocol import call_names, parse_turn, tool_parameters

_PLACEHOLDER = "WIKISIM_TURN_PLACEHOLDER"


@dataclass(frozen=True)
class Budget:
    """Limits of one episode on the agent side (the env enforces its own turn limit too).

    Attributes:
        max_turns: policy turns before the episode is cut (truncated=True).
        max_context_tokens: prompt + all turns + observations; cut when no room is left.
        max_new_tokens: most tokens a policy may generate in one turn.
    """

    max_turns: int = EnvConfig.max_turns
    max_context_tokens: int = 8192
    max_new_tokens: int = 512

    def __post_init__(self) -> None:
        at_least(
            "Budget",
            1,
            max_turns=self.max_turns,
            max_context_tokens=self.max_context_tokens,
            max_new_tokens=self.max_new_tokens,
        )


@dataclass(frozen=True)
class TurnRequest:
    """What a policy sees for one turn of one episode: what a model would see, never gold answers.

    The chat, its token ids, the tool schemas and the budget; no task id (ids may spell the
    answer). A policy built with its task set (the oracle) finds the task by its question.
    """

    messages: tuple[dict[str, str], ...]  # chat so far, ending with a user turn
    ids: tuple[int, ...]  # the same context as token ids (empty without a tokenizer)
    max_new_tokens: int
    seed: int  # a stable hash of (task id, episode seed, turn index)
    turn: int
    tools: tuple[Mapping[str, Any], ...] = ()  # the env's tool schemas

    @property
    def question(self) -> str:
        """The user turn that opened the episode."""
        return self.messages[1]["content"]


@dataclass(frozen=True)
class Generation:
    """A policy's turn: text, plus the sampled ids and their logprobs when it has them."""

    text: str
    ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    forced: bool = False  # a turn the policy was given, not one it wrote (see Turn.forced)
    forced_at: tuple[int, ...] = ()  # positions in `ids` it was given (see Turn.forced_at)

    def __post_init__(self) -> None:
        if (self.ids is None) != (self.logprobs is None):
            raise ValueError("Generation needs both ids and logprobs, or neither")
        if self.ids is not None and len(self.ids) != len(self.logprobs or ()):
            raise ValueError(
                f"Generation has {len(self.ids)} ids but {len(self.logprobs or ())} logprobs"
            )
        if any(not 0 <= j < len(self.ids or ()) for j in self.forced_at):
            raise ValueError(f"Generation's forced_at {self.forced_at} is outside its ids")


class ChatFormat:
    """Splits a tokenizer's chat template into prompt ids and the glue between policy turns."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.eos_text = tokenizer.eos_token or ""
        base = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _PLACEHOLDER}]
        closed = tokenizer.apply_chat_template(base, tokenize=False)
        nxt = tokenizer.apply_chat_template(
            [*base, {"role": "user", "content": _PLACEHOLDER}],
            tokenize=False,
            add_generation_prompt=True,
        )
        if not nxt.startswith(closed) or closed.count(_PLACEHOLDER) != 1:
            raise ConfigError(
                "the tokenizer's chat template does not render conversations as prefixes of each other; "
                "use a ChatML-like template (see agent.rollout.models.CHATML_TOOLS_TEMPLATE)"
            )
        self.end_of_turn = closed[closed.index(_PLACEHOLDER) + len(_PLACEHOLDER) :]
        before, after = nxt[len(closed) :].split(_PLACEHOLDER)
        self.user_open, self.user_close = before, after

    def encode(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(
        self, messages: Sequence[Mapping[str, str]], tools: Sequence[Mapping] | None
    ) -> tuple[int, ...]:
        text = self.tokenizer.apply_chat_template(
            list(messages),
            tools=list(tools) if tools else None,
            tokenize=False,
            add_generation_prompt=True,
        )
        return self.encode(text)

    def glue_ids(self, turn_text: str, observation_content: str) -> tuple[int, ...]:
        """Ids between a policy turn and the next one: close the turn, the tool turn, reopen."""
        end = self.end_of_turn
        if self.eos_text and turn_text.endswith(self.eos_text) and end.startswith(self.eos_text):
            end = end[len(self.eos_text) :]
        return self.encode(end + self.user_open + observation_content + self.user_close)


class Episode:
    """One ReAct episode's state: the chat, the token context and the finished turns.

    Usage: `request()` -> policy -> `add_generation(g)` returns the action for `env.step`;
    then `add_observation(obs)` or `finish(...)`. `done` says when to stop.
    """

    def __init__(
        self,
        *,
        task_id: str,
        question: str,
        system_prompt: str,
        tools: Sequence[Mapping[str, Any]] = (),
        seed: int,
        budget: Budget,
        chat: ChatFormat | None = None,
        tools_in_template: bool = False,
    ) -> None:
        self.task_id, self.seed, self.budget, self.chat = task_id, seed, budget, chat
        self.tools = tuple(tools)
        self._parameters = tool_parameters(self.tools)
        self.prompt_messages = (
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": question},
        )
        self.messages: list[dict[str, str]] = list(self.prompt_messages)
        template_tools = tools if tools_in_template else None
        self.prompt_ids = chat.prompt_ids(self.prompt_messages, template_tools) if chat else ()
        self.context: list[int] = list(self.prompt_ids)
        self.turns: list[Turn] = []
        self._pending: tuple[Generation, str] | None = None
        self.terminated = False
        self.truncated = self.room() < 1  # the prompt alone fills the context budget

    @property
    def done(self) -> bool:
        return self.truncated or self.terminated

    def room(self) -> int:
        """Tokens the next turn may generate (context budget minus what is used)."""
        if self.chat is None:
            return self.budget.max_new_tokens
        return min(self.budget.max_new_tokens, self.budget.max_context_tokens - len(self.context))

    def request(self) -> TurnRequest:
        return TurnRequest(
            messages=tuple(dict(m) for m in self.messages),
            ids=tuple(self.context),
            max_new_tokens=self.room(),
            seed=zlib.crc32(f"{self.task_id}/{self.seed}/{len(self.turns)}".encode()),
            turn=len(self.turns),
            tools=self.tools,
        )

    def add_generation(self, gen: Generation) -> str:
        """Record a policy turn; returns the action text for `env.step` (end-of-turn token removed)."""
        if self._pending is not None or self.done:
            raise RuntimeError(
                f"episode {self.task_id}: a turn was added while one is pending or after the end"
            )
        text = gen.text
        ids: tuple[int, ...] = ()
        logprobs: tuple[float, ...] = ()
        if self.chat is not None:
            if (
                gen.ids is None or gen.logprobs is None
            ):  # text-only policy (scripted, HTTP): tokenised once, logprob 0
                ids = self.chat.encode(text)
                # held to the budget a model's turn stops at; a forced turn only to the context's
                room = (
                    self.budget.max_context_tokens - len(self.context)
                    if gen.forced
                    else self.room()
                )
                if len(ids) > room:
                    ids = ids[:room]
                    text = self.chat.tokenizer.decode(list(ids), skip_special_tokens=False)
                logprobs = (0.0,) * len(ids)
            else:
                ids, logprobs = gen.ids, gen.logprobs
                text = self.chat.tokenizer.decode(list(ids), skip_special_tokens=False)
            self.context += ids
        action = text
        eos = self.chat.eos_text if self.chat else ""
        if eos and action.endswith(eos):
            action = action[: -len(eos)]
        self._pending = (Generation(text, ids, logprobs, gen.forced, gen.forced_at), action)
        self.messages.append({"role": "assistant", "content": action})
        return action

    def add_observation(self, observation: str) -> None:
        """Append the env's observation; cut the episode if the budgets leave no room."""
        gen, _ = self._take_pending()
        obs_ids = self.chat.glue_ids(gen.text, observation) if self.chat else ()
        self.turns.append(self._turn(gen, observation, obs_ids))
        self.messages.append({"role": "user", "content": observation})
        self.context += obs_ids
        if len(self.turns) >= self.budget.max_turns or (self.chat is not None and self.room() < 1):
            self.truncated = True

    def finish(self, *, terminated: bool, truncated: bool) -> None:
        """End after the last turn (answer given, or the env cut the episode)."""
        if self._pending is not None:
            gen, _ = self._take_pending()
            self.turns.append(self._turn(gen, "", ()))
        self.terminated = self.terminated or terminated
        self.truncated = self.truncated or truncated

    def trajectory(
        self,
        *,
        policy: str,
        reward: float,
        manifest_hash: str,
        answer: str | None = None,
        metrics: Mapping[str, float] | None = None,
        timings: Mapping[str, float] | None = None,
    ) -> Trajectory:
        if answer is None and self.turns:
            answer = parse_turn(self.turns[-1].text, self._parameters).answer
        return Trajectory(
            task_id=self.task_id,
            seed=self.seed,
            policy=policy,
            prompt_ids=tuple(self.prompt_ids),
            turns=tuple(self.turns),
            answer=answer,
            reward=float(reward),
            terminated=self.terminated,
            truncated=self.truncated and not self.terminated,
            manifest_hash=manifest_hash,
            version=__version__,
            metrics=dict(metrics or {}),
            timings=dict(timings or {}),
            prompt_messages=self.prompt_messages,
        )

    def _take_pending(self) -> tuple[Generation, str]:
        if self._pending is None:
            raise RuntimeError(f"episode {self.task_id}: observation without a policy turn")
        pending, self._pending = self._pending, None
        return pending

    def _turn(self, gen: Generation, observation: str, obs_ids: tuple[int, ...]) -> Turn:
        return Turn(
            text=gen.text,
            ids=gen.ids or (),
            logprobs=gen.logprobs or (),
            observation=observation,
            observation_ids=obs_ids,
            tool_calls=call_names(parse_turn(gen.text, self._parameters)),
            forced=gen.forced,
            forced_at=gen.forced_at,
        )
