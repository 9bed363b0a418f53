"""Trajectories as the trainer and the harness read them: token-in, token-out.

The ids a policy produced are kept exactly as sampled and the observation ids exactly as
appended, so the training sequence is never re-tokenised (drift would break RL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Turn:
    text: str  # the policy's raw turn text, decoded from `ids`
    ids: tuple[int, ...]  # token ids the policy produced (loss mask 1)
    logprobs: tuple[float, ...]  # the sampler's log-probability of each id in `ids`
    observation: str = ""  # the env's observation text after this turn ("" after the last)
    observation_ids: tuple[int, ...] = ()  # ids appended after the turn (loss mask 0)
    tool_calls: tuple[str, ...] = ()  # names of the tools this turn called
    forced: bool = False  # replayed from another policy (a teacher's start): loss mask 0
    # positions in `ids` the sampler was given, not sampled (`</think>` at the think's budget,
    # SamplingConfig.think_budget): loss mask 0, the rest of the turn is the policy's own
    forced_at: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.logprobs):
            raise ValueError(f"turn has {len(self.ids)} ids but {len(self.logprobs)} logprobs")
        if any(not 0 <= j < len(self.ids) for j in self.forced_at):
            raise ValueError(
                f"turn's forced_at {self.forced_at} is outside its {len(self.ids)} ids"
            )


@dataclass(frozen=True)
class Trajectory:
    task_id: str
    seed: int
    policy: str
    prompt_ids: tuple[int, ...]
    turns: tuple[Turn, ...]
    answer: str | None  # None when the episode ended without an answer
    reward: float
    terminated: bool  # ended by an answer
    truncated: bool  # cut by the turn, context or observation budget
    manifest_hash: str
    version: str
    metrics: dict[str, float] = field(default_factory=dict)  # em, f1, judge, ...
    timings: dict[str, float] = field(default_factory=dict)  # wall time; not compared for replay
    prompt_messages: tuple[
        dict[str, str], ...
    ] = ()  # system + user messages the episode began with

    def token_ids(self) -> list[int]:
        ids = list(self.prompt_ids)
        for t in self.turns:
            ids += t.ids
            ids += t.observation_ids
        return ids

    def called(self, tool: str) -> bool:
        """Wrote a call to `tool` in some turn, whether the env ran it or refused it."""
        return any(tool in t.tool_calls for t in self.turns)

    def loss_mask(self) -> list[int]:
        """1 on the policy's own tokens, 0 on prompt, observation and forced tokens and turns."""
        mask = [0] * len(self.prompt_ids)
        for t in self.turns:
            own = [int(not t.forced)] * len(t.ids)
            for j in t.forced_at:
                own[j] = 0
            mask += own + [0] * len(t.observation_ids)
        return mask

    def logprobs(self) -> list[float]:
        """Sampling log-probabilities aligned with `token_ids` (0.0 where the mask is 0)."""
        out = [0.0] * len(self.prompt_ids)
        for t in self.turns:
            out += list(t.logprobs) + [0.0] * len(t.observation_ids)
        return out

    def messages(self) -> list[dict[str, str]]:
        """The whole chat: prompt messages, then each turn and its observation (as a user turn)."""
        out = [dict(m) for m in self.prompt_messages]
        for t in self.turns:
            out.append({"role": "assistant", "content": t.text})
            if t.observation:  # the env's observation, wrapped by the turn protocol
                out.append({"role": "user", "content": t.observation})
        return out

    def canonical(self) -> dict[str, Any]:
        """Everything but wall-clock timings: equal for runs that must be byte-identical."""
        d = asdict(self)
        d.pop("timings")
        return d

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        turns = tuple(
            Turn(
                **{
                    **t,
                    **{
                        k: tuple(t[k])
                        for k in ("ids", "logprobs", "observation_ids", "tool_calls", "forced_at")
                        if k in t  # forced_at: absent in trajectories written before it
                    },
                }
            )
            for t in d["turns"]
        )
        messages = tuple(dict(m) for m in d.get("prompt_messages", ()))
        return cls(
            **{
                **d,
                "prompt_ids": tuple(d["prompt_ids"]),
                "turns": turns,
                "prompt_messages": messages,
            }
        )


def write_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for t in trajectories:
            f.write(t.to_json() + "\n")


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield Trajectory.from_dict(json.loads(line))
