"""The harness: one policy x one task set x seeds -> trajectories, summary.json, a table and plots.

`evaluate(EvalConfig(...))` is what `wikisim eval`, the sweep, the demo and the notebook
call. Everything except wall-clock fields is a pure function of the config, so two runs
with the same config give byte-identical trajectories (canonical form) and results.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from agent.eval.metrics import breakdowns, summarize
from agent.eval.report import write_csv, write_markdown, write_plots
from agent.rollout.episodes import jobs_for, make_envs, rollout
from agent.rollout.policies import Policy, make_policy
from agent.rollout.policies.base import DecodeDtype
from agent.rollout.react import Budget
from agent.rollout.trajectory import Trajectory, write_trajectories
from wikisim.checks import at_least, check_literals
from wikisim.env.config import EnvConfig
from wikisim.env.tasks import load_tasks
from wikisim.flags import config_to_dict

TIMING_KEYS = (
    "wall_s",
    "env_s",
    "policy_s",
    "episodes_per_s",
    "generated_tokens_per_s",
    "env_share",
)


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run: a policy on the env `env` describes, over seeds.

    Attributes:
        policy: a policy name or path (see `agent.rollout.policies.make_policy`).
        env: the env's settings (task file, index, turn limit, retriever, reward, ...).
        seeds: episodes per task, with seeds first_seed..first_seed+seeds-1.
        envs: episodes live at once (the policy's batch across episodes).
        temperature, top_p, batch_size, think_budget, decode_dtype, presence_penalty: sampling
            for local model policies (`SamplingConfig`); temperature, top_p and presence_penalty
            are sent to a server.
        max_new_tokens, max_context_tokens: agent-side budgets per turn and per episode.
        tokenizer: a model folder whose tokenizer gives text-only policies token ids.
        limit: evaluate only the first `limit` tasks (0: all).
        first_seed: the first seed (a sweep runs one seed per cell).
    """

    policy: str = "search-answer"
    env: EnvConfig = EnvConfig()
    seeds: int = 1
    envs: int = 8
    temperature: float = 0.0
    top_p: float = 1.0
    batch_size: int = 8
    think_budget: int = 0
    decode_dtype: DecodeDtype = "float32"
    presence_penalty: float = 0.0
    max_new_tokens: int = Budget.max_new_tokens
    max_context_tokens: int = Budget.max_context_tokens
    tokenizer: str | None = None
    limit: int = 0
    first_seed: int = 0

    def __post_init__(self) -> None:
        check_literals(self)
        at_least(
            "EvalConfig",
            1,
            seeds=self.seeds,
            envs=self.envs,
            batch_size=self.batch_size,
            max_new_tokens=self.max_new_tokens,
            max_context_tokens=self.max_context_tokens,
        )
        at_least(
            "EvalConfig",
            0,
            limit=self.limit,
            first_seed=self.first_seed,
            think_budget=self.think_budget,
        )

    @property
    def budget(self) -> Budget:
        return Budget(
            max_turns=self.env.max_turns,
            max_context_tokens=self.max_context_tokens,
            max_new_tokens=self.max_new_tokens,
        )


def evaluate(
    config: EvalConfig,
    out: str | Path | None = None,
    *,
    policy: Policy | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], list[Trajectory]]:
    """Run the episodes; with `out`, write trajectories.jsonl, summary.json, results.md and plots.

    Args:
        policy: an already built policy (skips loading one from `config.policy`).
    """
    tasks = load_tasks(config.env.tasks)
    if config.limit:
        tasks = type(tasks)(list(tasks)[: config.limit], tasks.name)
    policy = policy or make_policy(
        config.policy,
        temperature=config.temperature,
        top_p=config.top_p,
        batch_size=config.batch_size,
        think_budget=config.think_budget,
        decode_dtype=config.decode_dtype,
        presence_penalty=config.presence_penalty,
        tokenizer_path=config.tokenizer,
        tasks=tasks,
    )
    envs = make_envs(min(config.envs, len(tasks) * config.seeds), config.env, tasks=tasks)
    budget = config.budget
    jobs = jobs_for(tasks.ids(), range(config.first_seed, config.first_seed + config.seeds))
    bar = tqdm(total=len(jobs), desc=policy.name, disable=not progress, dynamic_ncols=True)
    tally = [0.0, 0]  # correct, finished

    def done(traj: Trajectory) -> None:
        tally[0] += traj.metrics.get("em", 0.0)
        tally[1] += 1
        bar.update(1)
        bar.set_postfix(em=f"{tally[0] / tally[1]:.3f}", refresh=False)

    start = time.perf_counter()
    trajs = rollout(envs, policy, jobs, budget=budget, on_done=done)
    wall = time.perf_counter() - start
    bar.close()
    envs.close()
    summary = {
        "policy": policy.name,
        "tasks_file": tasks.name,
        "manifest_hash": trajs[0].manifest_hash if trajs else "",
        "config": config_to_dict(config),
        **summarize(trajs, metric="judge" if config.env.reward == "judge" else "em"),
        "breakdowns": breakdowns(trajs, {t.id: t.to_dict() for t in tasks}),
    }
    generated = sum(
        len(turn.ids) for t in trajs for turn in t.turns
    )  # the policy's turns, in tokens
    env_total = sum(t.timings.get("env_s", 0.0) for t in trajs)
    summary.update(
        wall_s=wall,
        episodes_per_s=len(trajs) / wall,
        generated_tokens_per_s=generated / wall,
        env_share=env_total / wall,
    )
    if out is not None:
        write_results(Path(out), summary, trajs)
    return summary, trajs


def write_results(out: Path, summary: dict[str, Any], trajs: list[Trajectory]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_trajectories(out / "trajectories.jsonl", trajs)
    (out / "summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    write_markdown(out / "results.md", [summary])
    write_csv(out / "results.csv", [summary])
    write_plots(out, trajs, max_turns=summary["config"]["max_turns"], title=summary["policy"])


def deterministic(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without wall-clock fields: equal across runs of the same config."""
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}
