"""`wikisim train sft|grpo --config FILE.yaml [--any-setting VALUE ...]`: resumable training runs.

Run under `accelerate launch -m wikisim.cli train ...` for several processes (CPU/gloo,
DDP, FSDP or DeepSpeed through an Accelerate config); a second call with the same
`--output-dir` continues from the newest checkpoint. `train grpo --generation-server URL`
samples rollouts from an OpenAI-compatible server that reloads the weights after every
update (`python -m agent.rollout.model_server`, or SGLang; see `agent.train.weight_sync`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from agent.train.config import GRPOConfig, SFTConfig, TrainConfig
from wikisim.flags import add_config_arguments, config_from_args

if TYPE_CHECKING:  # the CLI starts without gymnasium, torch or the env
    from agent.rollout.trajectory import Trajectory
    from agent.train.episodes import EnvRunner
    from wikisim.env.tasks import TaskSet

SHORT_SYSTEM_PROMPT = (
    "You are a deep research assistant. Give the final answer enclosed in <answer></answer> tags."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="stage", required=True)
    for name, cls, text in (
        ("sft", SFTConfig, "rejection-sampled SFT"),
        ("grpo", GRPOConfig, "on-policy GRPO"),
    ):
        p = sub.add_parser(name, help=text, description=f"{text}; every setting is also a YAML key")
        add_config_arguments(p, cls)


def run(args: argparse.Namespace) -> int:
    if args.stage == "sft":
        return _sft(config_from_args(SFTConfig, args))
    return _grpo(config_from_args(GRPOConfig, args))


def _runner(cfg: TrainConfig, tasks: TaskSet, slots: int) -> EnvRunner:
    """Envs for `slots` concurrent episodes (one batched policy call per turn across them)."""
    from agent.train.episodes import EnvRunner

    prompt = SHORT_SYSTEM_PROMPT if cfg.system_prompt == "short" else cfg.system_prompt
    return EnvRunner.for_run(cfg, tasks, slots, prompt or None)


def _training_tasks(cfg: TrainConfig) -> tuple[TaskSet, TaskSet | None]:
    """(training tasks, dev tasks): training questions that share an answer with a dev question
    are left out, so that dev measures questions whose answers were never trained on."""
    from wikisim.env.tasks import load_tasks

    train = load_tasks(cfg.env.tasks)
    if not cfg.dev_tasks:
        return train, None
    dev = load_tasks(cfg.dev_tasks)
    kept = train.without_answers_of(dev)
    if len(kept) < len(train):
        print(
            f"{len(train) - len(kept)} of {len(train)} training questions share an answer with dev_tasks: left out"
        )
    return kept, dev


def _grpo(cfg: GRPOConfig) -> int:
    from agent.train.episodes import task_tags
    from agent.train.grpo import probe_start, train_grpo
    from agent.train.loop import load_model
    from wikisim.env.tasks import TaskSet, task_sources

    train, dev = _training_tasks(cfg)
    both = TaskSet([*train, *dev], "train+dev") if dev is not None else train
    tokenizer, model = load_model(cfg, cfg.init_checkpoint)
    with _runner(cfg, both, min(256, cfg.questions_per_step * cfg.group_size)) as runner:
        sampler = runner.sampler(tokenizer, cfg.generation_server, cfg.server_model)
        prior = None
        if cfg.probe_questions:  # start on questions the starting weights sometimes solve
            start = probe_start(
                sampler,
                model,
                train.ids(),
                questions=cfg.probe_questions,
                samples=cfg.probe_samples,
                seed=cfg.seed,
                temperature=cfg.temperature,
                band=(cfg.band_low, cfg.band_high),
            )
            prior = start.prior
            print(f"probe: {len(start.in_band)} of {len(start.rates)} questions in the band")
            if prior is None:
                print("probe: none in the band; the curriculum starts without the probe's rates")
        del model
        res = train_grpo(
            cfg,
            train.ids(),
            sampler,
            dev_ids=dev.ids() if dev else (),
            tags={t.id: task_tags(t) for t in train},
            prior=prior,
            sources=task_sources(cfg.env.tasks) if cfg.even_sources else None,
        )
    last = res.history[-1] if res.history else {}
    print(json.dumps({"final": res.final_dir, "steps": res.steps, "reward": last.get("reward")}))
    return 0


def _sft(cfg: SFTConfig) -> int:
    from agent.rollout.trajectory import read_trajectories
    from agent.train.sft import train_sft

    kept = (
        list(read_trajectories(cfg.trajectories))
        if cfg.trajectories
        else _teach(cfg, _training_tasks(cfg)[0])
    )
    res = train_sft(cfg, kept)
    print(
        json.dumps(
            {
                "final": res.final_dir,
                "steps": res.steps,
                "last_loss": res.losses[-1] if res.losses else None,
            }
        )
    )
    return 0


def _teach(cfg: SFTConfig, tasks: TaskSet) -> list[Trajectory]:
    """Rejection-sampled teacher episodes (written to output_dir/sft_data.jsonl with a report)."""
    from agent.rollout.policies import SCRIPTED, Policy, make_policy
    from agent.rollout.policies.scripted import OraclePolicy, SearchAnswerPolicy
    from agent.rollout.react import ChatFormat
    from agent.rollout.trajectory import write_trajectories
    from agent.train.loop import load_model
    from agent.train.sft import cap_direct, rejection_sample
    from agent.train.teachers import RESEARCH_TEACHERS, ResearchTeacher

    tokenizer, _ = load_model(cfg)
    chat = ChatFormat(tokenizer)
    teacher: Policy
    if cfg.teacher in RESEARCH_TEACHERS:
        teacher = ResearchTeacher(
            tasks,
            chat,
            max_turns=cfg.env.max_turns,
            known_only=RESEARCH_TEACHERS[cfg.teacher],
            recover_share=cfg.recover_share,
            min_searches=cfg.min_searches,
            copy_queries=cfg.copy_queries,
        )
    elif cfg.teacher in SCRIPTED:
        teacher = OraclePolicy(tasks, chat) if cfg.teacher == "oracle" else SearchAnswerPolicy(chat)
    else:
        teacher = make_policy(cfg.teacher, temperature=1.0)
    with _runner(cfg, tasks, min(64, len(tasks))) as runner:
        kept, report = rejection_sample(
            runner.teacher(teacher, chat, cfg.seed), tasks.ids(), cfg.samples_per_question
        )
    kept = cap_direct(kept, cfg.direct_share, cfg.seed)
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_trajectories(out / "sft_data.jsonl", kept)
    (out / "rejection_report.json").write_text(
        json.dumps(report.as_dict(), indent=1, sort_keys=True)
    )
    print(
        f"rejection sampling: kept {report.kept_total} of {report.tried_total} "
        f"({sum(1 for v in report.kept.values() if v)}/{len(report.kept)} questions with any)"
        + (f"; {len(kept)} after direct_share={cfg.direct_share}" if cfg.direct_share < 1 else "")
    )
    return kept
