"""WikiSim-v0 episodes for the trainer: the GRPO sampler and the rejection-sampling teacher.

Both run through `agent.rollout.episodes` (batched policy calls over a pool of envs), so training
sees exactly the trajectories the harness would record. The GRPO sampler wraps the
*current* in-process weights in a `TransformersPolicy` on every call (strictly
on-policy), or asks a generation server (token-in/token-out `OpenAIPolicy`) whose weights
the trainer keeps in sync (`agent.train.weight_sync`).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym

from agent.rollout.policies.base import DecodeDtype
from agent.rollout.react import Budget, ChatFormat, Episode, Generation
from agent.rollout.trajectory import Trajectory
from agent.train.config import TrainConfig
from agent.train.sft import gold_retrieved
from agent.train.starts import StartedPolicy, Starts
from agent.train.teachers import echoes
from wikisim.env.config import EnvConfig
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import ConfigError

if TYPE_CHECKING:
    import torch


def drawn(
    task_ids: Sequence[str], n: int, seed: int, sources: Mapping[str, str] | None = None
) -> list[str]:
    """`n` of `task_ids` drawn by `seed` whatever order they are listed in (the first n of a file
    list would all be its first file's).

    With `sources` (task id -> the file it came from, `wikisim.env.tasks.task_sources`) each
    source gives one in turn, while it has any: an even draw. Else the largest file fills it:
    the synthesized training split is 3/4 of learn_agent's questions and 6/7 of the 48 its GRPO
    played (session 43), so GRPO hardly met a human-written question."""
    ids = sorted(task_ids)
    rng = random.Random(seed)
    if not sources:
        rng.shuffle(ids)
        return ids[:n]
    unknown = [t for t in ids if t not in sources]
    if unknown:
        raise ConfigError(f"no source given for {len(unknown)} task ids, e.g. {unknown[0]!r}")
    by_source: dict[str, list[str]] = {}
    for t in ids:
        by_source.setdefault(sources[t], []).append(t)
    queues = []
    for source in sorted(by_source):
        rng.shuffle(by_source[source])
        queues.append(by_source[source])
    return [t for row in itertools.zip_longest(*queues) for t in row if t is not None][:n]


class Sampler(Protocol):
    """`n` contiguous trajectories per task id, sampled from `model` at `temperature`; the task
    ids in `starts` start from their teacher's turns (`agent.train.starts`)."""

    def __call__(
        self,
        model: torch.nn.Module,
        task_ids: Sequence[str],
        n: int,
        seed: int,
        temperature: float,
        starts: Starts | None = None,
    ) -> list[Trajectory]: ...


class SystemPrompt(gym.Wrapper):
    """Replace the env's system prompt (e.g. a short one for a tiny model whose context is precious)."""

    def __init__(self, env: gym.Env, prompt: str) -> None:
        super().__init__(env)
        self.prompt = prompt

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, "system_prompt": self.prompt}


def task_tags(task: Task) -> dict[str, str]:
    """Curriculum tags of a task: its uncertainty kinds and its structure (synth records), else hops."""
    ex = task.extra
    unc = ex.get("uncertainty")
    tags = {
        "uncertainty": "+".join(sorted(map(str, unc))) or "none"
        if isinstance(unc, list)
        else "none"
    }
    sub = ex.get("subgraph")
    if isinstance(sub, dict):
        tags["structure"] = (
            f"{len(sub.get('nodes', []))}n-{'cyclic' if sub.get('cyclic') else 'acyclic'}"
        )
    else:
        tags["structure"] = f"{ex.get('hops', '?')}hop"
    return tags


class EnvRunner:
    """A pool of WikiSim-v0 envs over one task set, and the budgets every episode runs under.

    The env's settings (turns, retriever, context) are its `EnvConfig`; the runner adds only
    what a policy's budget needs beyond them: tokens per turn and per episode.
    """

    def __init__(
        self,
        tasks: TaskSet,
        env: EnvConfig,
        *,
        max_new_tokens: int,
        max_context_tokens: int,
        slots: int,
        system_prompt: str | None = None,
        think_budget: int = 0,
        decode_dtype: DecodeDtype = "float32",
    ) -> None:
        from agent.rollout.episodes import make_envs

        self.tasks = tasks
        self.pool = make_envs(slots, env, tasks=tasks)
        self.envs = (
            [SystemPrompt(e, system_prompt) for e in self.pool] if system_prompt else self.pool
        )
        self.budget = Budget(
            max_turns=env.max_turns,
            max_context_tokens=max_context_tokens,
            max_new_tokens=max_new_tokens,
        )
        self.batch_size = slots
        # the in-process sampler's SamplingConfig.think_budget and decode_dtype
        self.think_budget, self.decode_dtype = think_budget, decode_dtype

    @classmethod
    def for_run(
        cls, cfg: TrainConfig, tasks: TaskSet, slots: int, system_prompt: str | None = None
    ) -> EnvRunner:
        """The envs a training run's config describes, over `tasks` (its training and dev questions)."""
        return cls(
            tasks,
            cfg.env,
            max_new_tokens=cfg.max_new_tokens,
            max_context_tokens=cfg.max_context_tokens,
            slots=slots,
            system_prompt=system_prompt,
            think_budget=cfg.think_budget,
            decode_dtype=cfg.decode_dtype,
        )

    def close(self) -> None:
        """Close the envs and the backend they share."""
        self.pool.close()

    def __enter__(self) -> EnvRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self, policy: Any, task_ids: Sequence[str], n: int, seed: int, starts: Starts | None = None
    ) -> list[Trajectory]:
        """`n` episodes per task id (contiguous), each with its own seed derived from `seed`; the
        episodes of a task id in `starts` replay its teacher's turns first (`StartedPolicy`)."""
        from agent.rollout.episodes import Job, rollout

        if starts:
            policy = StartedPolicy(policy, self.tasks, starts)
        jobs = [
            Job(tid, seed * 100_000 + i * n + j) for i, tid in enumerate(task_ids) for j in range(n)
        ]
        return rollout(self.envs, policy, jobs, budget=self.budget)

    def annotate(self, trajs: Sequence[Trajectory]) -> list[Trajectory]:
        """The trajectories with what GRPO's shaping reads off their task: `metrics["retrieved"]`,
        1.0 when the policy's own searching put a gold answer in an observation (`gold_retrieved`;
        GRPOConfig.retrieval_bonus pays it), and `metrics["echo"]`, 1.0 when the answer is words
        of the question (GRPOConfig.echo_penalty charges it when wrong)."""
        out = []
        for t in trajs:
            task = self.tasks.get(t.task_id)
            retrieved = gold_retrieved(t, task.answers)
            metrics = {
                **t.metrics,
                "retrieved": float(retrieved),
                "echo": float(echoes(t.answer, task.question)),
            }
            out.append(dataclasses.replace(t, metrics=metrics))
        return out

    def sampler(
        self, tokenizer: Any, server: str = "", server_model: str = "policy"
    ) -> Callable[..., list[Trajectory]]:
        """A GRPO `Sampler`: the given weights, sampled at the given temperature, in the env (the
        questions in `starts` from their teacher's turns before its answer).

        With `server` (a base URL up to /v1) the turns come from that server instead, token-in
        and token-out; the weights argument is then unused (the trainer syncs the server).
        """
        from agent.rollout.policies.openai_policy import OpenAIConfig, OpenAIPolicy
        from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy

        chat = ChatFormat(tokenizer)

        def sample(
            model: Any,
            task_ids: Sequence[str],
            n: int,
            seed: int,
            temperature: float,
            starts: Starts | None = None,
        ) -> list[Trajectory]:
            if server:
                remote = OpenAIPolicy(
                    OpenAIConfig(
                        base_url=server,
                        model=server_model,
                        temperature=temperature,
                        concurrency=self.batch_size,
                        token_in=True,
                    ),
                    name="grpo",
                    chat=chat,
                )
                try:
                    return self.annotate(self.run(remote, task_ids, n, seed, starts))
                finally:
                    remote.close()
            policy = TransformersPolicy(
                tokenizer,
                model,
                name="grpo",
                sampling=SamplingConfig(
                    temperature=temperature,
                    batch_size=self.batch_size,
                    think_budget=self.think_budget,
                    decode_dtype=self.decode_dtype,
                ),
            )
            try:
                return self.annotate(self.run(policy, task_ids, n, seed, starts))
            finally:
                model.train()
                # a size that ran out of memory stays down for the next steps
                self.batch_size = policy.sampling.batch_size

        return sample

    def teacher(
        self, policy: Any, student_chat: ChatFormat, seed: int = 0
    ) -> Callable[[Sequence[str], int], list[Trajectory]]:
        """`play(task_ids, attempt)` for `agent.train.sft.rejection_sample`, ids in the student's tokenizer."""

        def play(task_ids: Sequence[str], attempt: int) -> list[Trajectory]:
            trajs = self.run(policy, task_ids, 1, seed * 1_000 + attempt)
            same = policy.chat is not None and policy.chat.tokenizer is student_chat.tokenizer
            return trajs if same else [retokenize(t, student_chat, self.budget) for t in trajs]

        return play


def retokenize(t: Trajectory, chat: ChatFormat, budget: Budget) -> Trajectory:
    """A teacher's trajectory in another tokenizer: replay its text turns through `Episode` (SFT only;
    RL never re-tokenises, its ids are the sampled ones)."""
    if len(t.prompt_messages) != 2:
        raise ConfigError(
            f"trajectory {t.task_id} has no prompt messages to re-tokenise; record it with agent.rollout.episodes"
        )
    system, user = t.prompt_messages
    ep = Episode(
        task_id=t.task_id,
        question=user["content"],
        system_prompt=system["content"],
        seed=t.seed,
        budget=Budget(
            max_turns=max(budget.max_turns, len(t.turns)),
            max_context_tokens=1 << 30,
            max_new_tokens=budget.max_new_tokens,
        ),
        chat=chat,
    )
    for i, turn in enumerate(t.turns):
        # given positions do not carry over to other token ids: such a turn is given whole
        ep.add_generation(Generation(text=turn.text, forced=turn.forced or bool(turn.forced_at)))
        if i < len(t.turns) - 1:
            ep.add_observation(turn.observation)
    ep.finish(terminated=t.terminated, truncated=t.truncated)
    return ep.trajectory(
        policy=t.policy,
        reward=t.reward,
        manifest_hash=t.manifest_hash,
        answer=t.answer,
        metrics=t.metrics,
    )
