"""A GRPO update that runs each question's shared prefix once, against one that runs every row whole.

The G rollouts of a question share their first tokens: the system prompt and the question, and
from a teacher's start (`--teacher-starts`) the teacher's replayed turns too. `GRPOConfig.
shared_prefix` (`agent.train.prefix`) runs that prefix forward and backward once per group and
each row only past it. This samples real groups, in the real env and the CPU bench's compact
context (4 turns, temperature 0.7, F1 reward, as bench/learn_agent.py's GRPO) from the shipped
adapter: `--questions` training questions x `--group-size` rollouts from scratch, and the same
questions started from the research teacher's episodes. With their rewards set to 1, 0, 1, ... in
each group (a row whose advantage is zero is not run at all), it times one update
(`agent.train.grpo.grpo_update`, fresh weights and optimizer each time) both ways, alternating,
in this process, and checks that their loss and gradient norm agree. Sampling each group is
timed too, with rows of the same context prefilled once (`prefill_rows`, the policy's way: a
started group's G rows share the teacher's turns) and each row apart, with the share of
rollouts whose ids agree (started groups only: a scratch group's rows share only the question).
An update's rows go one at a time by default, as configs/learn/grpo.yaml runs them on CPU: a
micro-batch pads its rows to the longest, and 8 rows of ~1,000 tokens held over 20 GB here.

    nice -n 10 .venv/bin/python bench/grpo_prefix.py [--questions 2] [--group-size 8] [--micro-batch 1]
        [--repeats 2] [--rollouts bench/results/grpo_prefix_run]
Writes bench/results/grpo_prefix.json; the last line is its JSON summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from grpo_step import RESULTS, _timed  # noqa: E402
from learn_agent import ENV, load_data  # noqa: E402

import agent.rollout.policies.transformers_policy as tp  # noqa: E402
import agent.train.grpo as grpo  # noqa: E402
from agent.rollout.models import load_local  # noqa: E402
from agent.rollout.react import ChatFormat  # noqa: E402
from agent.rollout.trajectory import (  # noqa: E402
    Trajectory,
    read_trajectories,
    write_trajectories,
)
from agent.train.config import GRPOConfig  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.loop import collate  # noqa: E402
from agent.train.losses import kept_positions  # noqa: E402
from agent.train.prefix import shared_prefix  # noqa: E402
from agent.train.sft import rejection_sample  # noqa: E402
from agent.train.starts import teacher_starts  # noqa: E402
from agent.train.teachers import ResearchTeacher  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.flags import build_config  # noqa: E402

ADAPTER = "data/models/smollm2-wikisim-lora"


def sample(args: argparse.Namespace) -> tuple[dict[str, list[Trajectory]], dict[str, dict]]:
    """Groups from scratch and from the teacher's starts, on the first training questions the
    research teacher answers from an observation after more than one turn; and the sampling time
    of each with rows of the same context prefilled once (the policy's way) and each row apart."""
    data = load_data(1)
    env = build_config(EnvConfig, {**ENV, "reward": "f1", "max_turns": 4})
    runner = EnvRunner(
        data.tasks,
        env,
        max_new_tokens=96,
        max_context_tokens=2048,
        slots=args.questions * args.group_size,
    )
    try:
        tok, model = load_local(ADAPTER)
        chat = ChatFormat(tok)
        teacher = ResearchTeacher(data.tasks, chat, max_turns=env.max_turns)
        kept, _ = rejection_sample(runner.teacher(teacher, chat, args.seed), data.train[:40], 1)
        starts = teacher_starts(kept)
        questions = list(starts)[: args.questions]
        sampler = runner.sampler(tok)
        groups: dict[str, list[Trajectory]] = {}
        timing: dict[str, dict] = {}
        for mode in ("scratch", "started"):
            mine = {q: starts[q] for q in questions} if mode == "started" else None
            times, runs = {}, {}
            # a scratch group's rows share only the question (the system prompt is cached once
            # per run): only started groups are sampled both ways
            for name in ("each row apart", "twins once") if mine else ("twins once",):
                apart = name == "each row apart"
                with (
                    mock.patch.object(tp, "prefill_rows", lambda c: list(range(len(c))))
                    if apart
                    else nullcontext()
                ):
                    t0 = time.perf_counter()
                    runs[name] = sampler(model, questions, args.group_size, args.seed, 0.7, mine)
                    times[name] = time.perf_counter() - t0
                print(mode, name, f"{times[name]:.1f}s", flush=True)
            b = runs["twins once"]
            groups[mode] = b
            if not mine:
                continue
            a = runs["each row apart"]
            timing[mode] = {
                "time_s": times,
                "time_ratio_apart_over_twins": times["each row apart"] / times["twins once"],
                "same_ids_share": sum(
                    x.token_ids() == y.token_ids() for x, y in zip(a, b, strict=True)
                )
                / len(a),
            }
        return groups, timing
    finally:
        runner.close()


def every_row_runs(trajs: list[Trajectory]) -> list[Trajectory]:
    """Rewards 1, 0, 1, ... in each group: a row with a zero advantage is not run
    (`rows_in_update`), and the cost compared is that of rows that are."""
    return [dataclasses.replace(t, reward=float(i % 2 == 0)) for i, t in enumerate(trajs)]


def update(args: argparse.Namespace, trajs: list[Trajectory], shared: bool) -> dict:
    """One GRPO update of the shipped adapter, `--micro-batch` rows at a time: past each
    question's shared prefix, or every row whole."""
    cfg = GRPOConfig(
        output_dir=str(RESULTS / "grpo_prefix_run"),
        model="smollm2",
        init_checkpoint=ADAPTER,
        lora_rank=8,
        lora_alpha=16,
        group_size=args.group_size,
        micro_batch_size=args.micro_batch,
        shared_prefix=shared,
        cpu=True,
    )

    def run(model, opt, sched, acc, pad_id: int) -> dict[str, float]:
        out = grpo.grpo_update(model, opt, sched, acc, trajs, cfg, pad_id)
        return {k: out[k] for k in ("loss", "grad_norm", "rows_run")}

    return _timed(cfg, ADAPTER, run)


def shape(trajs: list[Trajectory], group_size: int) -> dict[str, float]:
    """Tokens per row, and the share of them in each group's shared prefix."""
    rows, prefix = 0, 0
    for i in range(0, len(trajs), group_size):
        batch = collate(trajs[i : i + group_size], 0)
        p = shared_prefix(batch, kept_positions(batch.loss_mask))
        rows += int(batch.attention_mask.sum())
        prefix += p * group_size
    return {"tokens_per_row": rows / len(trajs), "prefix_share": prefix / rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument(
        "--rollouts", default="", help="a folder of this bench's sampled groups to reuse"
    )
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    summary: dict = {**vars(args), "modes": {}}
    saved = Path(args.rollouts or RESULTS / "grpo_prefix_run")
    if args.rollouts:
        groups = {m: list(read_trajectories(saved / f"{m}.jsonl")) for m in ("scratch", "started")}
    else:
        groups, summary["sampling"] = sample(args)
        saved.mkdir(parents=True, exist_ok=True)
        for m, trajs in groups.items():
            write_trajectories(saved / f"{m}.jsonl", trajs)
    for mode, sampled in groups.items():
        trajs = every_row_runs(sampled)
        runs: dict[str, list[dict]] = {"whole rows": [], "shared prefix": []}
        for _ in range(args.repeats):
            for name in runs:
                runs[name].append(update(args, trajs, name == "shared prefix"))
                print(mode, name, runs[name][-1], flush=True)
        time = {k: statistics.median(r["time_s"] for r in v) for k, v in runs.items()}
        whole, shared = runs["whole rows"][0], runs["shared prefix"][0]
        summary["modes"][mode] = {
            **shape(trajs, args.group_size),
            "rows_run": whole["rows_run"],
            "time_s": time,
            "time_ratio_whole_over_shared": time["whole rows"] / time["shared prefix"],
            "peak_rss_gb": {k: max(r["peak_rss_gb"] for r in v) for k, v in runs.items()},
            "loss_abs_diff": abs(whole["loss"] - shared["loss"]),
            "grad_norm_rel_diff": abs(whole["grad_norm"] - shared["grad_norm"])
            / max(whole["grad_norm"], 1e-12),
        }
    summary["load_avg_1min"] = os.getloadavg()[0]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "grpo_prefix.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
