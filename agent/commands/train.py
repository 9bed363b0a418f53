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

from agent.train.config import GRPOConfig, SFTConfig
from wikisim.flags import add_config_arguments, config_from_args

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
        p.add_argument(
            "--system-prompt",
            default=None,
            help="replace the env's system prompt ('short' for a one-line prompt, for tiny models)",
        )


def _runner(cfg, tasks, system_prompt: str | None, slots: int):
    """Envs for `slots` concurrent episodes (one batched policy call per turn across them)."""
    from agent.train.episodes import EnvRunner

    prompt = SHORT_SYSTEM_PROMPT if system_prompt == "short" else system_prompt
    from agent.train.data import resolve_index

    return EnvRunner(
        tasks,
        index=resolve_index(cfg.index),
        retriever=cfg.retriever,
        max_turns=cfg.max_turns,
        max_new_tokens=cfg.max_new_tokens,
        max_context_tokens=cfg.max_context_tokens,
        slots=slots,
        system_prompt=prompt,
        batch_size=slots,
        search_k=cfg.search_k,
        visit_tokens=cfg.visit_tokens,
        prompt=cfg.prompt,
    )


def run(args: argparse.Namespace) -> int:
    from agent.train.data import load_task_spec
    from wikisim.env.tasks import load_tasks

    if args.stage == "sft":
        sft = config_from_args(SFTConfig, args)
        return _sft(
            sft, load_task_spec(sft.tasks) if sft.tasks else load_tasks(None), args.system_prompt
        )
    return _grpo(config_from_args(GRPOConfig, args), args.system_prompt)


def _grpo(cfg: GRPOConfig, system_prompt: str | None) -> int:
    from agent.train.data import load_task_spec
    from wikisim.env.tasks import TaskSet, load_tasks

    train = load_task_spec(cfg.tasks) if cfg.tasks else load_tasks(None)
    dev = load_task_spec(cfg.dev_tasks) if cfg.dev_tasks else None
    both = TaskSet([*train, *dev], "train+dev") if dev is not None else train
    from agent.train.episodes import task_tags
    from agent.train.grpo import train_grpo
    from agent.train.loop import load_model

    tokenizer, _ = load_model(cfg, cfg.init_checkpoint)
    runner = _runner(cfg, both, system_prompt, min(256, cfg.questions_per_step * cfg.group_size))
    sampler = runner.sampler(tokenizer, cfg.generation_server, cfg.server_model)
    res = train_grpo(
        cfg,
        train.ids(),
        sampler,
        dev_ids=dev.ids() if dev else (),
        tags={t.id: task_tags(t) for t in train},
    )
    last = res.history[-1] if res.history else {}
    print(json.dumps({"final": res.final_dir, "steps": res.steps, "reward": last.get("reward")}))
    return 0


def _sft(cfg: SFTConfig, tasks, system_prompt: str | None) -> int:
    from agent.rollout.react import ChatFormat
    from agent.rollout.trajectory import read_trajectories, write_trajectories
    from agent.train.loop import load_model
    from agent.train.sft import rejection_sample, train_sft

    if cfg.trajectories:
        kept = list(read_trajectories(cfg.trajectories))
    else:
        from agent.rollout.policies import SCRIPTED, Policy, make_policy
        from agent.rollout.policies.scripted import OraclePolicy, SearchAnswerPolicy

        tokenizer, _ = load_model(cfg)
        chat = ChatFormat(tokenizer)
        teacher: Policy
        if cfg.teacher == "research":
            from agent.train.teachers import ResearchTeacher

            teacher = ResearchTeacher(tasks, chat, max_turns=cfg.max_turns)
        elif cfg.teacher in SCRIPTED:
            teacher = (
                OraclePolicy(tasks, chat) if cfg.teacher == "oracle" else SearchAnswerPolicy(chat)
            )
        else:
            teacher = make_policy(cfg.teacher, temperature=1.0)
        runner = _runner(cfg, tasks, system_prompt, min(64, len(tasks)))
        kept, report = rejection_sample(
            runner.teacher(teacher, chat, cfg.seed), tasks.ids(), cfg.samples_per_question
        )
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_trajectories(out / "sft_data.jsonl", kept)
        (out / "rejection_report.json").write_text(
            json.dumps(report.as_dict(), indent=1, sort_keys=True)
        )
        print(
            f"rejection sampling: kept {report.kept_total} of {report.tried_total} "
            f"({sum(1 for v in report.kept.values() if v)}/{len(report.kept)} questions with any)"
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
