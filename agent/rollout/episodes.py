"""Many episodes at once: a pool of envs, one batched policy call per step across all of them.

Jobs (task id, seed) are dealt to env slots in order; at every step each live episode
contributes one request to a single `policy.act` call, then every env steps. Results come
back in job order, so the output depends only on the jobs, the policy and the slot count.
The returned trajectories carry ids, masks, logprobs, rewards, tool timings, the manifest
hash and the seed, and are written with `agent.rollout.trajectory.write_trajectories`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import gymnasium as gym

from agent.rollout.policies.base import Policy
from agent.rollout.react import Budget, Episode
from agent.rollout.trajectory import Trajectory
from wikisim.checks import at_least
from wikisim.env.config import EnvConfig, open_backend, resolve_index
from wikisim.env.tasks import TaskSet
from wikisim.errors import ConfigError


@dataclass(frozen=True)
class Job:
    task_id: str
    seed: int


def jobs_for(task_ids: Sequence[str], seeds: Sequence[int]) -> list[Job]:
    """Every task under every seed, seeds innermost (a task's samples are contiguous)."""
    return [Job(t, s) for t in task_ids for s in seeds]


class EnvPool(Sequence[gym.Env]):
    """`n` WikiSim-v0 envs over one backend, which the pool builds and closes (the index is opened once)."""

    def __init__(self, n: int, config: EnvConfig, tasks: TaskSet | None = None) -> None:
        at_least("EnvPool", 1, n=n)
        self.config = resolve_index(config)
        self.backend = open_backend(self.config)
        self.envs = [
            gym.make(
                "WikiSim-v0",
                disable_env_checker=True,
                config=self.config,
                tasks=tasks,
                backend=self.backend,
            )
            for _ in range(n)
        ]

    @overload
    def __getitem__(self, i: int) -> gym.Env: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[gym.Env]: ...
    def __getitem__(self, i: int | slice) -> gym.Env | Sequence[gym.Env]:
        return self.envs[i]

    def __len__(self) -> int:
        return len(self.envs)

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.backend.close()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_envs(
    n: int, config: EnvConfig | None = None, tasks: TaskSet | str | None = None, **settings: Any
) -> EnvPool:
    """`n` envs sharing one backend; `settings` are `EnvConfig` fields overriding `config`."""
    config = config or EnvConfig()
    if isinstance(tasks, str):
        settings["tasks"] = tasks
        tasks = None
    return EnvPool(n, config.replace(**settings) if settings else config, tasks)


@dataclass
class _Slot:
    index: int
    job: Job
    episode: Episode
    manifest_hash: str
    judged: bool  # the env's reward is an LLM judge's score
    timings: dict[str, float] = field(default_factory=lambda: {"env_s": 0.0, "policy_s": 0.0})


def rollout(
    envs: Sequence[gym.Env],
    policy: Policy,
    jobs: Sequence[Job],
    *,
    budget: Budget | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Run every job to the end; returns trajectories in job order.

    Args:
        envs: the slots (at most this many episodes are live at once).
        budget: agent-side limits (the env's own `max_turns` also applies).
        on_done: called with each trajectory as it finishes (progress bars, streaming writes).
    """
    if not envs:
        raise ConfigError("rollout needs at least one env")
    budget = budget or Budget()
    queue = deque(enumerate(jobs))
    live: dict[int, _Slot] = {}  # env slot -> the episode running in it
    results: list[Trajectory | None] = [None] * len(jobs)

    def close(i: int, reward: float, info: Mapping[str, Any]) -> None:
        slot = live.pop(i)
        traj = _trajectory(slot, policy.name, reward, info)
        results[slot.index] = traj
        if on_done is not None:
            on_done(traj)

    while queue or live:
        for i, env in enumerate(envs):
            while i not in live and queue:
                live[i] = _start(env, *queue.popleft(), policy, budget)
                if live[i].episode.done:  # the prompt alone is over budget
                    close(i, 0.0, {})
        order = sorted(live)
        if not order:
            continue
        t0 = time.perf_counter()
        generations = policy.act([live[i].episode.request() for i in order])
        share = (time.perf_counter() - t0) / len(order)
        for i, gen in zip(order, generations, strict=True):
            slot = live[i]
            slot.timings["policy_s"] += share
            action = slot.episode.add_generation(gen)
            t0 = time.perf_counter()
            obs, reward, terminated, truncated, info = envs[i].step(action)
            slot.timings["env_s"] += time.perf_counter() - t0
            for tool, seconds in info.get("latency_s", {}).items():
                slot.timings[f"tool:{tool}_s"] = slot.timings.get(f"tool:{tool}_s", 0.0) + seconds
            if terminated or truncated:
                slot.episode.finish(terminated=terminated, truncated=truncated)
                close(i, float(reward), info)
            else:
                slot.episode.add_observation(obs)
                if slot.episode.done:
                    close(i, 0.0, info)
    return [t for t in results if t is not None]


def _start(env: gym.Env, index: int, job: Job, policy: Policy, budget: Budget) -> _Slot:
    question, info = env.reset(seed=job.seed, options={"task_id": job.task_id})
    episode = Episode(
        task_id=info["task_id"],
        question=question,
        system_prompt=info["system_prompt"],
        tools=info["tools"],
        seed=job.seed,
        budget=budget,
        chat=policy.chat,
    )
    return _Slot(index, job, episode, info["manifest_hash"], judged=info["reward"] == "judge")


def _trajectory(slot: _Slot, policy: str, reward: float, info: Mapping[str, Any]) -> Trajectory:
    answered = "answer" in info
    metrics = {
        "em": float(info.get("em", 0.0)),
        "f1": float(info.get("f1", 0.0)),
        # calls the env could not run as written (no such tool, arguments off its schema)
        "malformed": float(info.get("episode_malformed", 0)),
    }
    if answered and slot.judged:
        metrics["judge"] = float(reward)
    return slot.episode.trajectory(
        policy=policy,
        reward=reward,
        manifest_hash=slot.manifest_hash,
        answer=info["answer"] if answered else None,
        metrics=metrics,
        timings=slot.timings,
    )
