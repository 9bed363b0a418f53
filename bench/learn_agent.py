"""The learning proof: SmolLM2-135M-Instruct learns to research in WikiSim-v0 (rejection-sampled SFT, then GRPO).

The real model the package ships, its own tokenizer and chat template, the real env and tools:
  1. untrained SmolLM2 on each held-out set (greedy);
  2. rejection sampling: `agent.train.teachers.ResearchTeacher` plays every training question
     K times (varied queries, visits with goals, an answer read from an observation); only
     correct, well-formed, distinct trajectories whose answer was observed are kept;
  3. SFT (LoRA) on them, then GRPO from the SFT adapter, both exactly as `wikisim train sft|grpo`
     run them (`agent.train.sft.train_sft`, `agent.train.grpo.train_grpo`); GRPO trains on the
     training questions the teacher answered from an observation: the SFT policy first plays
     one episode of `--own-starts N` of them, and GRPO trains on those it answered after its own
     searches put a gold answer on screen, every group started from that episode's turns before
     its answer (`agent.train.starts`: its reading, in its own states), one group per question
     before a second pass, with exact match as the reward, paid only for an answer read in an
     observation (`--no-grounded-only` pays recall too), at temperature 0.7. `--own-starts 0`
     plays from scratch instead, starting on the questions the SFT policy sometimes solves (pass
     rates probed on `--probe-questions` of them), with `--teacher-starts S` a share S of the
     groups from the teacher's episode before its answer;
  4. each checkpoint evaluated by the harness behind `wikisim eval --policy DIR` (greedy), and
     the scripted `search-answer` floor on the same questions and env options.
Training questions: the train split of the questions synthesized over the run's own index
(`data/tasks/synth-qa-*.jsonl`: `wikisim synth --index <sample-qa> --n 600 --seed 0`, read at
run time), and the first 70 HotpotQA and MuSiQue train items, less any whose answer is a
held-out question's. Held out, each reported apart: the synthesized test and dev splits, the
bundled `sample.jsonl`, and the last 30 HotpotQA and MuSiQue items. One index holds the 2014
sample and the HotpotQA and MuSiQue corpora (bm25s, built once).
The method is `configs/learn/sft.yaml` and `grpo.yaml`'s (the flags' defaults come from them, so
this bench and `wikisim train sft|grpo --config configs/learn/...` run one method): the
research-known teacher; env options for a small model's context (3 results per search,
150-token extracts, the compact system prompt, the same turn format, 4 turns of at most 128
tokens, thinking closed after a turn's 56th token; the paper's defaults are otherwise
unchanged); GRPO from the policy's own episodes, exact match paid only for an answer read in an
observation, the format penalty and the KL penalty to the SFT weights. Only the sizes (steps,
batches, questions, own episodes played) are the profiles' own, and GRPO's learning rate (3e-4
for 2-question steps; the config's 2e-4 is for its 8-question ones).

    .venv/bin/python bench/learn_agent.py --quick            # one seed, tiny budgets, 14 min on 2 cores
    .venv/bin/python bench/learn_agent.py                    # on CPU: 3 seeds, 28 GRPO steps, every
                                                             # held-out question (~4 hours on 2 cores)
    .venv/bin/python bench/learn_agent.py --device cuda      # 3 seeds, the GPU budget (every held-out question)
    for s in 0 1 2; do                                       # or side by side on one GPU, merged
      python bench/learn_agent.py --device cuda --threads 5 --seeds $s --deadline-s 500 \
        --gpu-memory-fraction 0.3 --max-new-tokens 128 --pass-samples 1 --eval-batch 128 \
        --probe-questions 64 --dev-every 3 --name gpu_s$s \
        $([ $s = 0 ] || echo --no-untrained) &             # one process evaluates the untrained model
    done; wait; python bench/learn_agent.py --combine bench/results/gpu_s{0,1,2}.json --name learn_agent_gpu
    .venv/bin/python bench/learn_agent.py --reevaluate bench/results/learn_agent_cpu.json \
        --eval-limit 24 --name learn_agent_cpu_24   # the run's checkpoints on 24 questions a set
                                                    # (several JSONs: seeds run in parts, one report)
    .venv/bin/python bench/learn_agent.py --seeds 0 1 --grpo-steps 28 --sft-from \
        bench/results/learn_agent_cpu --no-untrained --name grpo28   # GRPO again from that run's SFT
    .venv/bin/python bench/learn_agent.py --combine bench/results/grpo28.json \
        --untrained-from bench/results/learn_agent_cpu.json --name grpo28_report  # its untrained eval

Output: a table per held-out set, per group (human-written, synthesized) and pooled (stage x EM,
F1, pass@1 with 95% intervals over tasks, search and visit calls, grounded share, tokens per
episode), the learning issue's targets judged on them, per-stage wall times,
bench/results/learn_agent[_quick|_cpu].json and .png (held-out reward over GRPO steps); the last
line is one JSON object `{"stages": {"untrained": {...}, "sft": {...}, "grpo": {...}}, "targets":
{...}}`, the stages pooled over the held-out sets.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, get_args

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from learn_episodes import episode_stats  # noqa: E402
from learn_report import (  # noqa: E402
    combined_wall,
    report,
    stage_times,
)

from agent.eval.harness import EvalConfig, evaluate  # noqa: E402
from agent.eval.stats import bootstrap_mean  # noqa: E402
from agent.rollout.models import load_local, smollm2_dir  # noqa: E402
from agent.rollout.policies.base import DECODE_DTYPES  # noqa: E402
from agent.rollout.policies.scripted import SearchAnswerPolicy  # noqa: E402
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy  # noqa: E402
from agent.rollout.react import ChatFormat  # noqa: E402
from agent.rollout.trajectory import Trajectory, read_trajectories, write_trajectories  # noqa: E402
from agent.train.config import GRPOConfig, Precision, SFTConfig, recipe  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.grpo import ProbeStart, probe_start, train_grpo  # noqa: E402
from agent.train.loop import read_metrics  # noqa: E402
from agent.train.sft import answer_observed, cap_direct, rejection_sample, train_sft  # noqa: E402
from agent.train.starts import OWN_EPISODES, own_start_summary  # noqa: E402
from agent.train.teachers import (  # noqa: E402
    RESEARCH_TEACHERS,
    ResearchTeacher,
)
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import TASKS_DIR, TaskSet, load_tasks  # noqa: E402
from wikisim.flags import build_config  # noqa: E402
from wikisim.index import DEFAULT_RETRIEVER, RETRIEVERS  # noqa: E402
from wikisim.paths import QA_DIR  # noqa: E402
from wikisim.revision import code_revision  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
HUMAN_TRAIN, HUMAN_HELD = 70, 30  # HotpotQA / MuSiQue items: first 70 train, last 30 held out


# The method (env context, teacher, GRPO's shaping) is configs/learn/*.yaml's, read as
# `wikisim train sft|grpo --config` reads them, so the two run one method; flags override it.
SFT_RECIPE = recipe(SFTConfig)
GRPO_RECIPE = recipe(GRPOConfig)
ENV = {
    k: getattr(GRPO_RECIPE.env, k)
    for k in ("index", "retriever", "search_k", "visit_tokens", "prompt", "python")
}
GRPO_CURVE = (
    "step",
    "reward",
    "solve_rate",
    "adv_nonzero_share",
    "grad_norm",
    "dev_pass@1",
    "tool_calls",
    "answered_share",
    "malformed_share",
    "unsearched_share",
    "health_unanswered",
    "health_unsearched",
    "health_reward",
    "health_rolled_back",  # a failed check that went back to health_kept_step's weights
    "health_kept_step",
    "loss",
    "dynamic_rounds",  # --dynamic-rounds: the extra rounds a step played
    "mixed_groups",  # and its groups that both solved and failed
    "time_generate",  # a step's rollouts
    "time_train",  # its update
    "time_health",  # the collapse guard's check after it
    "time_dev_eval",  # its held-out point
)


@dataclass(frozen=True)
class Data:
    tasks: TaskSet  # every task the runner may be asked for
    train: list[str]
    held: dict[str, TaskSet]  # held-out set name -> its tasks
    sources: dict[str, str]  # training task id -> its file (GRPOConfig.even_sources)


def load_data(eval_limit: int) -> Data:
    synth_train = load_tasks(TASKS_DIR / "synth-qa-train.jsonl")
    hotpot, musique = (
        list(load_tasks(QA_DIR / f"{n}-train-100.json")) for n in ("hotpotqa", "musique")
    )
    held_lists = {
        "synth-test": list(load_tasks(TASKS_DIR / "synth-qa-test.jsonl")),
        "synth-dev": list(load_tasks(TASKS_DIR / "synth-qa-dev.jsonl")),
        "bundled": list(load_tasks(TASKS_DIR / "sample.jsonl")),
        "hotpotqa-held": hotpot[-HUMAN_HELD:],
        "musique-held": musique[-HUMAN_HELD:],
    }
    held = {k: TaskSet(v[:eval_limit] if eval_limit else v, k) for k, v in held_lists.items()}
    # no training question answered by a held-out answer (a question about Luanda teaches
    # "What is the capital of Angola?"); every held-out set counts, however many are evaluated
    every_held = [t for v in held_lists.values() for t in v]
    train_parts = {  # each a source of GRPOConfig.even_sources
        "synth-qa-train": list(synth_train),
        "hotpotqa-train": hotpot[:HUMAN_TRAIN],
        "musique-train": musique[:HUMAN_TRAIN],
    }
    train = list(
        TaskSet([t for v in train_parts.values() for t in v], "train").without_answers_of(
            every_held
        )
    )
    every = {t.id: t for t in [*train, *(t for v in held_lists.values() for t in v)]}
    sources = {t.id: name for name, part in train_parts.items() for t in part}
    return Data(TaskSet(every.values(), "learn-agent"), [t.id for t in train], held, sources)


def machine(device: str) -> dict[str, str | int]:
    """What ran a seed, beside its code: the same seed and commit give the same weights to the
    byte on one kind of CPU, not across them (session 49: an AVX-512 EPYC's first SFT loss
    differs from session 43's machine's in the sixth digit), so a figure says where it came from."""
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(device)
    else:
        cpuinfo = Path("/proc/cpuinfo")
        models = (
            re.findall(r"model name\s*:\s*(.+)", cpuinfo.read_text()) if cpuinfo.exists() else []
        )
        name = models[0].strip() if models else platform.processor() or platform.machine()
    return {
        "device": name,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        # native bf16 arithmetic (AVX-512 BF16, AMX): what --decode-dtype bfloat16 gains from
        "cpu_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        # the cores this process may run on: the 2-hour target is for 2 (learn_report.budget)
        "cores": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count() or 0,
    }


class SFTStage(NamedTuple):
    """What GRPO starts from: its candidates (the training questions the teacher answered from
    an observation; the rest are out of reach in the turn budget and can only teach recall), the
    SFT weights, the teacher episodes they learned from, and the SFT eval's wall time (the
    deadline keeps as much for GRPO's)."""

    candidates: list[str]
    final_dir: str
    episodes: Path
    eval_s: float


class Bench:
    def __init__(self, args: argparse.Namespace, data: Data, out: Path) -> None:
        self.args, self.data, self.out = args, data, out
        self.started = time.perf_counter()
        self.device = args.device
        self.env = build_config(
            EnvConfig, {**ENV, "retriever": args.retriever, "max_turns": args.max_turns}
        )
        self.runner = EnvRunner(
            data.tasks,
            self.env,
            max_new_tokens=args.max_new_tokens,
            max_context_tokens=args.max_context,
            slots=args.questions_per_step * args.group_size,
            think_budget=args.think_budget,
            decode_dtype=args.decode_dtype,
        )
        self.held_ids = {k: set(v.ids()) for k, v in data.held.items()}
        self.gpu_peak_mb: dict[str, dict[str, float]] = {}  # stage -> peak allocated / reserved
        self.batch_backoffs: dict[str, list[tuple[int, int]]] = {}  # stage -> batch halvings
        self.decode: dict[str, dict] = {}  # eval stage -> CUDA graph steps and any fallback
        self.held_file = self.out / "heldout.jsonl"
        self.out.mkdir(parents=True, exist_ok=True)
        self.held_file.write_text(
            "".join(json.dumps(t.to_dict()) + "\n" for v in data.held.values() for t in v),
            encoding="utf-8",
        )

    def evaluate(self, name: str, policy_dir: str | None, seed: int | None = None) -> dict:
        """Every held-out set in one run of the harness (greedy; plus `--pass-samples` sampled
        episodes per task for pass@1), then stats per set; a seed's checkpoints write their
        trajectories under its own directory (`seedN/eval/STAGE`), so no seed overwrites another's."""
        where = self.out / (f"seed{seed}" if seed is not None else "") / "eval"
        policy: SearchAnswerPolicy | TransformersPolicy
        if policy_dir is None:
            policy = SearchAnswerPolicy(None)
        else:
            tok, model = load_local(policy_dir)
            policy = TransformersPolicy(
                tok,
                model.to(self.device),
                name=name,
                sampling=SamplingConfig(
                    batch_size=self.args.eval_batch,
                    think_budget=self.args.think_budget,
                    decode_dtype=self.args.decode_dtype,
                    presence_penalty=self.args.presence_penalty,
                ),
            )
        greedy = self._run(policy, name, policy_dir, where)
        sampled = []
        if self.args.pass_samples and isinstance(policy, TransformersPolicy):
            # the batch the greedy pass ended with: a size that ran out of memory stays down
            policy.sampling = dataclasses.replace(policy.sampling, temperature=1.0)
            sampled = self._run(policy, name, policy_dir, where, self.args.pass_samples)
        out = self.stats(greedy, sampled)
        self.gpu_peak(f"eval {name}")
        if isinstance(policy, TransformersPolicy) and policy.oom_backoffs:
            self.batch_backoffs[f"eval {name}"] = policy.oom_backoffs
        if isinstance(policy, TransformersPolicy) and policy.fixed is not None:
            # on a GPU: did the decode steps run as CUDA graphs, or why not
            self.decode[f"eval {name}"] = {
                "graph_steps": policy.fixed.replays,
                "fallback": policy.fixed.fallback,
            }
        return out

    def stats(self, greedy: list[Trajectory], sampled: list[Trajectory]) -> dict:
        """Per held-out set: the greedy episodes' `episode_stats`, and pass@1 of the sampled ones
        (when there are any)."""
        out = {
            held: episode_stats([t for t in greedy if t.task_id in ids], self.data.tasks)
            for held, ids in self.held_ids.items()
        }
        if sampled:
            for held, ids in self.held_ids.items():
                mine = [t for t in sampled if t.task_id in ids]
                p1 = bootstrap_mean(
                    [t.metrics.get("em", 0.0) for t in mine], [t.task_id for t in mine]
                )
                out[held]["pass@1"], out[held]["pass@1_ci95"] = p1.mean, [p1.low, p1.high]
        return out

    def references(self, untrained: bool) -> tuple[dict, dict | None, dict[str, float]]:
        """The scripted search-answer floor and (if asked) the untrained model on the held-out
        sets, with their wall times: what every seed's stages are measured against."""
        times = {}
        t = time.perf_counter()
        baseline = self.evaluate("search-answer", None)
        times["search-answer"] = time.perf_counter() - t
        t = time.perf_counter()
        evaluated = self.evaluate("untrained", str(smollm2_dir())) if untrained else None
        times["untrained"] = time.perf_counter() - t
        return baseline, evaluated, times

    def gpu_peak(self, stage: str) -> None:
        """Record the GPU memory peak since the last stage (seeds share one GPU side by side: a
        stage that holds far more than its tensors need shows up here, not as another's OOM)."""
        if self.device.startswith("cuda"):
            self.gpu_peak_mb[stage] = {
                "allocated": torch.cuda.max_memory_allocated() / 2**20,
                "reserved": torch.cuda.max_memory_reserved() / 2**20,
            }
            torch.cuda.reset_peak_memory_stats()

    def _run(
        self, policy, name: str, policy_dir: str | None, where: Path, samples: int = 0
    ) -> list[Trajectory]:
        """The harness behind `wikisim eval --policy DIR --tasks heldout.jsonl` with the bench's env options."""
        a = self.args
        cfg = build_config(
            EvalConfig,
            {
                **self.env.to_dict(),
                "policy": policy_dir or "search-answer",
                "tasks": str(self.held_file),
                "seeds": samples or 1,
                "envs": a.eval_batch,
                "batch_size": a.eval_batch,
                "temperature": 1.0 if samples else 0.0,
                "max_new_tokens": a.max_new_tokens,
                "think_budget": a.think_budget,
                "decode_dtype": a.decode_dtype,
                "max_context_tokens": a.max_context,
            },
        )
        summary, trajs = evaluate(cfg, policy=policy, progress=False)
        where = where / f"{name}{'-sampled' if samples else ''}"
        where.mkdir(parents=True, exist_ok=True)
        write_trajectories(where / "trajectories.jsonl", trajs)
        (where / "summary.json").write_text(
            json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8"
        )
        return trajs

    def probe(
        self,
        seed: int,
        sampler,
        candidates: list[str],
        sft_dir: str,
        temperature: float,
        res: dict,
    ) -> ProbeStart:
        """Where GRPO starts: the training questions the SFT policy solved sometimes but not always
        (a group with equal rewards has no advantage), by `agent.train.grpo.probe_start`."""
        a = self.args
        t0 = time.perf_counter()
        _, model = load_local(sft_dir)
        start = probe_start(
            sampler,
            model.to(self.device),
            candidates,
            questions=a.probe_questions,
            samples=a.probe_samples,
            seed=seed,
            temperature=temperature,
        )
        res["probe"] = {**start.summary(), "samples": a.probe_samples}
        res["time_s"]["probe"] = time.perf_counter() - t0
        return start

    def seed(self, seed: int, untrained: dict | None, seeds_left: int) -> dict:
        """One seed's rejection sampling, SFT, GRPO and evals; under `--deadline-s` it gets an
        equal share of the time left, and its GRPO runs the steps that fit in that share."""
        a, out = self.args, self.out / f"seed{seed}"
        # a resumed seed goes on from the SFT and GRPO checkpoints under `out`; one cut before
        # its SFT record was written has nothing there to go on from
        own_sft = a.resume and not a.sft_from and (out / SFT_RECORD).is_file()
        if not (a.resume and (a.sft_from or own_sft)):
            shutil.rmtree(out, ignore_errors=True)
        res: dict = {"seed": seed, "untrained": untrained, "time_s": {}, "code": code_revision()}
        res["machine"] = machine(self.device)
        t0 = time.perf_counter()
        deadline = t0 + (a.deadline_s - (t0 - self.started)) / seeds_left
        tok, _ = load_local(smollm2_dir())
        if a.sft_from:
            stage = self.reused_sft(seed, res)
        elif own_sft:
            stage = self.recorded_sft(seed, out, res)
        else:
            stage = self.sft(seed, tok, out, res)
        if a.sft_only:
            res["checkpoints"] = {"sft": stage.final_dir}
            return res
        train_ids = stage.candidates
        res["grpo_candidates"] = len(train_ids)
        t0 = time.perf_counter()
        gcfg = GRPOConfig(
            output_dir=str(out / "grpo"),
            seed=seed,
            model="smollm2",
            init_checkpoint=str(Path(stage.final_dir).parent / "adapter"),
            lora_rank=a.lora_rank,
            lora_alpha=2 * a.lora_rank,
            lr=a.grpo_lr,
            warmup_steps=a.grpo_warmup,
            temperature=a.grpo_temperature,
            format_penalty=a.format_penalty,
            grounded_only=a.grounded_only,
            exclude_truncated=a.exclude_truncated,
            unanswered_negative=a.unanswered_negative,
            refused_negative=a.refused_negative,
            kl_coef=a.kl_coef,
            retrieval_bonus=a.retrieval_bonus,
            echo_penalty=a.echo_penalty,
            malformed_penalty=a.malformed_penalty,
            unsearched_penalty=a.unsearched_penalty,
            dynamic_rounds=a.dynamic_rounds,
            steps=a.grpo_steps,
            questions_per_step=a.questions_per_step,
            group_size=a.group_size,
            micro_batch_size=a.micro_batch,
            cpu=self.device == "cpu",
            mixed_precision=a.mixed_precision,
            decode_dtype=a.decode_dtype,
            dev_every=a.dev_every,
            dev_k=2,
            save_every=a.save_every,
            keep_checkpoints=1,  # --resume goes on from the newest
            resume=a.resume,
            env=self.env,
            max_new_tokens=a.max_new_tokens,
            think_budget=a.think_budget,
            teacher_starts=a.teacher_starts,
            teacher_data=str(stage.episodes) if a.teacher_starts else "",
            own_starts=a.own_starts,
            own_share=a.own_share if a.own_starts else 1.0,
            even_sources=a.even_sources,
            health_questions=a.health_questions,
            health_every=a.health_every,
            health_margin=a.health_margin,
            health_retries=a.health_retries,
        )
        dev = [t.id for held in self.data.held.values() for t in list(held)[: a.dev_per_set]]
        runner = self.runner
        if a.grpo_reward != self.env.reward:
            runner = EnvRunner(
                self.data.tasks,
                self.env.replace(reward=a.grpo_reward),
                max_new_tokens=a.max_new_tokens,
                max_context_tokens=a.max_context,
                slots=a.questions_per_step * a.group_size,
                think_budget=a.think_budget,
                decode_dtype=a.decode_dtype,
            )
        sampler = runner.sampler(tok)
        prior = None
        if a.teacher_starts < 1 and not a.own_starts:  # pass rates from scratch say nothing of
            # groups started from a teacher's or the policy's own episode
            start = self.probe(seed, sampler, train_ids, stage.final_dir, gcfg.temperature, res)
            prior = start.prior
        if prior:  # start on the questions the SFT policy sometimes solves
            gcfg = dataclasses.replace(
                gcfg,
                curriculum=True,
                pool_size=max(len(start.in_band), a.questions_per_step),
                retire_after=4 * a.group_size,
                question_rollouts=a.question_groups * a.group_size,
            )
        # under --deadline-s GRPO stops once another step, at its pace so far, would leave no
        # time for the end eval
        stop_by = deadline - 1.5 * stage.eval_s - 30 if a.deadline_s else None
        resumed = a.resume and any((out / "grpo" / "checkpoints").glob("step-*/trainer_state.json"))
        g = train_grpo(
            gcfg,
            train_ids,
            sampler,
            dev_ids=dev,
            prior=prior,
            deadline=stop_by,
            sources=self.data.sources,
        )
        res["grpo_steps_run"] = g.steps
        res["grpo_kept_step"] = g.kept_step  # < steps run: the collapse guard stopped it there
        if a.own_starts:
            res["own_starts"] = own_start_summary(
                list(read_trajectories(out / "grpo" / OWN_EPISODES))
            )
        res["time_s"]["grpo"] = time.perf_counter() - t0
        res["grpo_resumed"] = resumed  # then time_s counts only the part after the cut
        self.gpu_peak("grpo")
        res["grpo_curve"] = [
            {k: r[k] for k in GRPO_CURVE if k in r}
            for r in read_metrics(out / "grpo" / "metrics.jsonl")
        ]
        t_eval = time.perf_counter()
        res["grpo"] = self.evaluate("grpo", g.final_dir, seed)
        res["time_s"]["eval grpo"] = time.perf_counter() - t_eval
        res["checkpoints"] = {
            "sft": stage.final_dir,
            "grpo": g.final_dir,
            "grpo_adapter": str(Path(g.final_dir).parent / "adapter"),
        }
        res["gpu_peak_mb"] = dict(self.gpu_peak_mb)
        res["batch_backoffs"] = dict(self.batch_backoffs)
        res["decode"] = dict(self.decode)
        return res

    def training_questions(self) -> list[str]:
        """The training questions the teacher plays (`--sft-questions` of them; 0: all), in
        order: GRPO's candidates are those it answered."""
        a = self.args
        return self.data.train[: a.sft_questions] if a.sft_questions else self.data.train

    def sft(self, seed: int, tok, out: Path, res: dict) -> SFTStage:
        """Rejection sampling, SFT and its eval: GRPO's candidates (the training questions the
        teacher answered from an observation), the SFT weights and the eval's wall time."""
        a = self.args
        t0 = time.perf_counter()
        chat = ChatFormat(tok)
        teacher = ResearchTeacher(
            self.data.tasks,
            chat,
            max_turns=a.max_turns,
            known_only=RESEARCH_TEACHERS[a.teacher],
            recover_share=a.recover_share,
            min_searches=a.min_searches,
            copy_queries=a.copy_queries,
        )
        questions = self.training_questions()
        drawn = seed if a.teacher_seed is None else a.teacher_seed  # one SFT dataset for every seed
        kept, report = rejection_sample(
            self.runner.teacher(teacher, chat, drawn), questions, a.samples_per_question
        )
        answered = [q for q in questions if report.kept.get(q)]
        kept = cap_direct(kept, a.direct_share, drawn)
        out.mkdir(parents=True, exist_ok=True)
        write_trajectories(out / "sft_data.jsonl", kept)
        # GRPO's candidates, all the teacher answered: `--direct-share` drops some from the data
        (out / CANDIDATES).write_text(json.dumps(answered), encoding="utf-8")
        res["rejection"] = {
            "kept": report.kept_total,
            "tried": report.tried_total,
            "questions_with_any": sum(1 for v in report.kept.values() if v),
            "all_grounded": all(map(answer_observed, kept)),
            "trained_on": len(kept),
            "teacher_seed": drawn,
        }
        res["time_s"]["rejection"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        scfg = SFTConfig(  # its config.yaml replays this SFT: `wikisim train sft --config`
            output_dir=str(out / "sft"),
            seed=seed,
            model="smollm2",
            env=self.env,
            teacher=a.teacher,
            samples_per_question=a.samples_per_question,
            direct_share=a.direct_share,
            recover_share=a.recover_share,
            min_searches=a.min_searches,
            copy_queries=a.copy_queries,
            trajectories=str(out / "sft_data.jsonl"),
            lora_rank=a.lora_rank,
            lora_alpha=2 * a.lora_rank,
            lr=a.sft_lr,
            epochs=a.sft_epochs,
            batch_size=a.sft_batch,
            micro_batch_size=a.micro_batch,
            max_steps=a.sft_steps,
            cpu=self.device == "cpu",
            mixed_precision=a.mixed_precision,
            resume=False,
        )
        sft = train_sft(scfg, kept)
        res["sft_losses"] = sft.losses
        res["time_s"]["sft"] = time.perf_counter() - t0
        self.gpu_peak("sft")
        t_eval = time.perf_counter()
        res["sft"] = self.evaluate("sft", sft.final_dir, seed)
        eval_s = res["time_s"]["eval sft"] = time.perf_counter() - t_eval
        record_sft(out, res, vars(a))
        return SFTStage(
            answered,
            sft.final_dir,
            out / "sft_data.jsonl",
            eval_s,
        )

    def recorded_sft(self, seed: int, out: Path, res: dict) -> SFTStage:
        """`--resume` of a run cut after this seed's SFT: its teacher episodes, SFT weights and
        SFT eval as this run's own SFT stage recorded them (`SFT_RECORD`), so a seed cut in GRPO
        does not train and evaluate its SFT again; an error unless its SFT ran with this run's
        SFT and eval flags."""
        where = f"--resume: {out / SFT_RECORD}"
        try:
            record = json.loads((out / SFT_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SystemExit(f"{where} is not readable ({e})") from e
        if differ := differing([where, "this run"], [record, {"args": vars(self.args)}], SFT_FLAGS):
            raise SystemExit(f"{where}: its SFT ran with other settings: {differ}")
        missing = [
            p for p in ("sft_data.jsonl", "sft/final", "sft/adapter") if not (out / p).exists()
        ]
        if missing:
            raise SystemExit(f"{where}: seed{seed}/ lacks {', '.join(missing)}")
        res |= {k: record[k] for k in ("rejection", "sft_losses", "sft")}
        res["time_s"] |= record["time_s"]
        res["sft_resumed"] = True  # its SFT ran in the process the cut ended
        return self.kept_stage(out, record["time_s"]["eval sft"])

    def kept_stage(self, seed_dir: Path, eval_s: float) -> SFTStage:
        """The SFT stage a seed folder holds: its candidates among this run's training questions,
        its SFT weights and teacher episodes, and the wall time its SFT eval took."""
        have = set(candidates(seed_dir))
        return SFTStage(
            [q for q in self.training_questions() if q in have],
            str(seed_dir / "sft" / "final"),
            seed_dir / "sft_data.jsonl",
            eval_s,
        )

    def reused_sft(self, seed: int, res: dict) -> SFTStage:
        """`--sft-from RUN`: this seed's teacher episodes, SFT weights and SFT eval as an earlier
        run with the same SFT and eval settings left them, so GRPO ablations share one SFT."""
        a = self.args
        earlier = reused_run(Path(a.sft_from), vars(a), seed)
        src = Path(a.sft_from) / f"seed{seed}"
        evals = src / "eval"
        sampled = evals / "sft-sampled" / "trajectories.jsonl"
        res["sft_from"] = str(src)
        res["sft_code"] = earlier.get("code")  # the flags agree; the code may not (None: older run)
        then = (res["sft_code"] or {}).get("commit")
        if then != res["code"]["commit"]:
            print(
                f"--sft-from: seed {seed}'s SFT ran at commit {then or '(not recorded)'}; "
                f"this run is at {res['code']['commit'] or '(not a checkout)'}"
            )
        res["rejection"] = earlier["rejection"]
        res["sft_losses"] = earlier["sft_losses"]
        res["sft"] = self.stats(
            list(read_trajectories(evals / "sft" / "trajectories.jsonl")),
            list(read_trajectories(sampled)) if a.pass_samples else [],
        )
        # this run spent none of the earlier one's times: only the deadline counts that eval's
        # (GRPO keeps as long for its own)
        return self.kept_stage(src, earlier["time_s"]["eval sft"])


#: The flags that shape an episode of a checkpoint's eval besides the questions: `--reevaluate`
#: merges runs only where they all agree.
EVAL_FLAGS = (
    "max_turns",
    "max_new_tokens",
    "think_budget",
    "decode_dtype",
    "max_context",
    "pass_samples",
    "presence_penalty",
    "retriever",
)

#: The flags that decide a seed's teacher episodes, SFT weights and SFT eval: `--sft-from` reuses
#: an earlier run's only where they all agree with this run's.
SFT_FLAGS = (
    "teacher",
    "teacher_seed",
    "sft_questions",
    "samples_per_question",
    "direct_share",
    "recover_share",
    "min_searches",
    "copy_queries",
    "sft_steps",
    "sft_epochs",
    "sft_batch",
    "sft_lr",
    "lora_rank",
    "micro_batch",
    "mixed_precision",
    *EVAL_FLAGS,
    "eval_limit",
    "eval_batch",
    "device",
)


#: A seed folder's GRPO candidates: the training questions its teacher answered, in order.
CANDIDATES = "grpo_candidates.json"
#: A seed folder's SFT stage as its run recorded it once the SFT eval ended: what `--resume`
#: goes on from when the run was cut in that seed's GRPO.
SFT_RECORD = "sft.json"


def record_sft(seed_dir: Path, res: dict, args: dict[str, Any]) -> None:
    """Write a seed's SFT stage (`SFT_RECORD`) once its SFT eval ended: `--resume` reads it."""
    record = {k: res[k] for k in ("rejection", "sft_losses", "sft")}
    record |= {"args": args, "time_s": dict(res["time_s"])}
    (seed_dir / SFT_RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")


def candidates(seed_dir: Path) -> list[str]:
    """The GRPO candidates a seed's SFT stage left; a folder from before the file, whose
    `sft_data.jsonl` then held them all (`reused_run` refuses one that could not), its episodes'."""
    path = seed_dir / CANDIDATES
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return list(dict.fromkeys(t.task_id for t in read_trajectories(seed_dir / "sft_data.jsonl")))


def reused_run(run_dir: Path, args: dict[str, Any], seed: int) -> dict:
    """The seed's results in the earlier run `--sft-from` names (its `partial.json`, written after
    each seed), checked to be reusable: the same SFT and eval settings, and every candidate GRPO
    draws from still in its episodes (a `--direct-share` below 1 drops some from the file)."""
    where = f"--sft-from {run_dir}"
    try:
        earlier = json.loads((run_dir / "partial.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SystemExit(f"{where}: no readable partial.json of a learn_agent run ({e})") from e
    if differ := differing([str(run_dir), "this run"], [earlier, {"args": args}], SFT_FLAGS):
        raise SystemExit(f"{where}: its SFT ran with other settings: {differ}")
    if args["direct_share"] < 1 and not (run_dir / f"seed{seed}" / CANDIDATES).is_file():
        raise SystemExit(
            f"{where}: seed{seed}/ predates {CANDIDATES}, and --direct-share below 1 dropped "
            "some of GRPO's candidates from its sft_data.jsonl"
        )
    runs = [r for r in earlier["runs"] if r["seed"] == seed]
    if not runs:
        done = [r["seed"] for r in earlier["runs"]]
        raise SystemExit(f"{where}: seed {seed} did not finish there (finished: {done})")
    needed = ["sft_data.jsonl", "sft/final", "sft/adapter", "eval/sft/trajectories.jsonl"]
    if args["pass_samples"]:
        needed.append("eval/sft-sampled/trajectories.jsonl")
    missing = [p for p in needed if not (run_dir / f"seed{seed}" / p).exists()]
    if missing:
        raise SystemExit(f"{where}: seed{seed}/ lacks {', '.join(missing)}")
    return runs[0]


def finished_seeds(run_dir: Path, args: dict[str, Any]) -> dict[int, dict]:
    """`--resume`: the seeds an interrupted run finished (its `partial.json`, written as it starts
    and after each seed; a run from before the first write has none), an error unless it ran
    this run's method."""
    path = run_dir / "partial.json"
    if not path.is_file():
        return {}
    earlier = json.loads(path.read_text(encoding="utf-8"))
    if differ := method_differs([str(run_dir), "this run"], [earlier, {"args": args}]):
        raise SystemExit(f"--resume {run_dir}: it ran with other settings: {differ}")
    return {r["seed"]: r for r in earlier["runs"] if r["seed"] in args["seeds"]}


def add_question_groups(p: argparse.ArgumentParser) -> None:
    """GRPO's `question_rollouts` in groups (this bench and grpo_from_sft.py)."""
    p.add_argument(
        "--question-groups",
        type=int,
        default=1,
        help="groups a question gets before it leaves the pool for fresh ones, until none is left "
        "(0: it stays while in band; a pool of the few in-band questions then has its answers memorised)",
    )


def add_retrieval_bonus(p: argparse.ArgumentParser, default: float = 0.0) -> None:
    """`--retrieval-bonus` (this bench and grpo_from_sft.py)."""
    p.add_argument(
        "--retrieval-bonus",
        type=float,
        default=default,
        help="added to the GRPO reward of a rollout whose own searches put a gold answer in an "
        "observation (GRPOConfig.retrieval_bonus): the answer reward pays reading only, and 13 CPU "
        "steps without it let searching decay (gold seen 0.44 -> 0.39 in session 24)",
    )


def add_gpu_memory_fraction(p: argparse.ArgumentParser) -> None:
    """`--gpu-memory-fraction` (this bench and grpo_from_sft.py): runs side by side on one GPU."""
    p.add_argument(
        "--gpu-memory-fraction",
        type=float,
        default=0.0,
        help="cap this process's share of the GPU (seeds run side by side: 0.3 each); "
        "past it the allocator frees its cache before failing (0: no cap)",
    )


def cap_gpu_memory(fraction: float, device: str) -> None:
    """At most `fraction` of the GPU for this process (0: no cap; off CUDA, nothing)."""
    if fraction and device.startswith("cuda"):
        # "cuda" names no index: None is the current device (torch rejects the bare name)
        torch.cuda.set_per_process_memory_fraction(fraction, torch.device(device).index)


#: `--teacher-seed own`: each seed draws its own teacher episodes. A run records it as None, as
#: the runs before the CPU profile set a bank did; the sentinel only outlives the profile's fill.
OWN_BANK = "own"


def teacher_seed(text: str) -> int | str:
    """`--teacher-seed`'s value: a seed, or 'own' (each seed its own bank)."""
    if text == OWN_BANK:
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a seed nor {OWN_BANK!r}") from None


def arguments() -> argparse.ArgumentParser:
    """The bench's flags; the method's defaults are configs/learn's, the sizes the profiles'."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--quick", action="store_true", help="one seed, tiny budgets (14 min on 2 cores)"
    )
    p.add_argument(
        "--profile",
        choices=("quick", "cpu", "gpu"),
        default=None,
        help="the budget: quick (as --quick), cpu (3 seeds of 28 GRPO steps, ~4 hours on 2 cores), gpu "
        "(3 seeds, every held-out question); default gpu on CUDA, else cpu",
    )
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument(
        "--eval-limit", type=int, default=None, help="questions per held-out set (0 = all)"
    )
    p.add_argument(
        "--sft-questions",
        type=int,
        default=None,
        help="training questions the teacher plays (0 = all)",
    )
    p.add_argument("--samples-per-question", type=int, default=None)
    p.add_argument("--sft-steps", type=int, default=None, help="0 = --sft-epochs over the data")
    p.add_argument(
        "--teacher",
        choices=tuple(RESEARCH_TEACHERS),
        default=SFT_RECIPE.teacher,
        help="research-known searches only what a student can type (no unnamed evidence titles; "
        "default: configs/learn/sft.yaml's)",
    )
    p.add_argument(
        "--direct-share",
        type=float,
        default=1.0,
        help="at most this share of the SFT episodes answer after one tool call (1: all kept)",
    )
    p.add_argument(
        "--recover-share",
        type=float,
        default=SFT_RECIPE.recover_share,
        help="this share of the teacher's episodes opens with a broken search call (not learned) "
        "and recovers from the env's error (agent.train.teachers; default: configs/learn/sft.yaml's)",
    )
    p.add_argument(
        "--min-searches",
        type=int,
        default=SFT_RECIPE.min_searches,
        help="the teacher searches at least this often before answering, each time typed another "
        "way (agent.train.teachers; default: configs/learn/sft.yaml's)",
    )
    p.add_argument(
        "--copy-queries",
        action=argparse.BooleanOptionalAction,
        default=SFT_RECIPE.copy_queries,
        help="the teacher's searches before an answer type copies of what the student sees: the "
        "question less what no page states, then a title the results showed (agent.train.teachers; "
        "default: configs/learn/sft.yaml's)",
    )
    p.add_argument(
        "--teacher-seed",
        type=teacher_seed,
        default=None,
        help="every seed's SFT learns from the teacher episodes drawn under this seed: one SFT "
        "dataset, the seeds varying only SFT's and GRPO's own draws; 'own': each seed draws its "
        "own (default: the profile's; the CPU profile's is 0)",
    )
    p.add_argument("--sft-epochs", type=int, default=2)
    p.add_argument("--sft-batch", type=int, default=None)
    p.add_argument("--sft-lr", type=float, default=SFT_RECIPE.lr)
    p.add_argument("--grpo-steps", type=int, default=None)
    p.add_argument("--grpo-lr", type=float, default=3e-4)
    p.add_argument(
        "--grpo-warmup",
        type=int,
        default=GRPO_RECIPE.warmup_steps,
        help="GRPO steps over which its learning rate rises linearly to --grpo-lr "
        "(GRPOConfig.warmup_steps): a fresh Adam's first steps move every weight by the full rate "
        "whatever the gradient's size, on the noise of a 2-question batch (0: none)",
    )
    p.add_argument(
        "--grpo-temperature",
        type=float,
        default=GRPO_RECIPE.temperature,
        help="GRPO's sampling temperature",
    )
    p.add_argument(
        "--format-penalty",
        type=float,
        default=GRPO_RECIPE.format_penalty,
        help="subtracted from the GRPO reward of rollouts without a well-formed answer",
    )
    p.add_argument(
        "--grounded-only",
        action=argparse.BooleanOptionalAction,
        default=GRPO_RECIPE.grounded_only,
        help="GRPO pays no reward for an answer never read in an observation "
        "(on few training questions GRPO otherwise learns to recall them and stops searching)",
    )
    p.add_argument(
        "--exclude-truncated",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="GRPO leaves out of its loss a rollout cut by the turn budget without an answer "
        "(the paper's conservative negatives); --no-exclude-truncated makes it a negative (28 "
        "started steps on 2 CPU cores: the policy's turn format collapsed, held-out EM 0.050 against "
        "0.083 after SFT and 0.117 with them left out; "
        "bench/results/learn_agent_starts_s21_seed0_keeptrunc.json)",
    )
    p.add_argument(
        "--unanswered-negative",
        action=argparse.BooleanOptionalAction,
        default=GRPO_RECIPE.unanswered_negative,
        help="GRPOConfig.unanswered_negative: a rollout that spent every turn on well-formed "
        "tool calls without answering is a negative, not a conservative exclusion (without it, "
        "seed 0's own-start GRPO left 36 of 60 held-out episodes unanswered; "
        "bench/results/learn_agent_cpu_s35_seed0.json)",
    )
    p.add_argument(
        "--refused-negative",
        action=argparse.BooleanOptionalAction,
        default=GRPO_RECIPE.refused_negative,
        help="GRPOConfig.refused_negative: a rollout that ran out of turns the policy ended "
        "itself, some refused by the env (a forged <tool_response>), is a negative, not a "
        "conservative exclusion (seed 2's refused turns rose unchecked from step 18; "
        "bench/results/learn_agent_cpu_s46_stop_seed2.json)",
    )
    p.add_argument(
        "--echo-penalty",
        type=float,
        default=GRPO_RECIPE.echo_penalty,
        help="GRPOConfig.echo_penalty: subtracted from a wrong answer that is words of the question "
        "(the SFT policy's fallback when it misses the answer)",
    )
    p.add_argument(
        "--malformed-penalty",
        type=float,
        default=GRPO_RECIPE.malformed_penalty,
        help="GRPOConfig.malformed_penalty: subtracted from a rollout that made a call the env "
        "could not run as written (seed 2's collapse began as visits without a URL, answered after)",
    )
    p.add_argument(
        "--unsearched-penalty",
        type=float,
        default=GRPO_RECIPE.unsearched_penalty,
        help="GRPOConfig.unsearched_penalty: subtracted from a rollout played from the question "
        "that answered without a search call (seed 1 drifted into answering from memory, session 50)",
    )
    p.add_argument(
        "--dynamic-rounds",
        type=int,
        default=None,
        help="GRPOConfig.dynamic_rounds: a step short of groups that both solved and failed plays "
        "up to this many more rounds of questions and trains on their mixed groups (0: off; "
        "default: configs/learn/grpo.yaml's 2; --quick's 0)",
    )
    p.add_argument(
        "--kl-coef",
        type=float,
        default=GRPO_RECIPE.kl_coef,
        help="GRPO's k3 KL penalty to the SFT weights it starts from (GRPOConfig.kl_coef; every "
        "row then runs, and a frozen copy of the model scores them), aimed at the drift from SFT's "
        "queries and turn format that 13-20 CPU steps showed (docs/learning-log.md: at 0.05 one seed kept its "
        "format; 0: none, as in the paper)",
    )
    p.add_argument("--questions-per-step", type=int, default=None)
    p.add_argument(
        "--probe-questions",
        type=int,
        default=None,
        help="teacher-solved training questions whose SFT pass rate is probed before GRPO (0 = all)",
    )
    p.add_argument("--probe-samples", type=int, default=4, help="episodes per probed question")
    p.add_argument(
        "--grpo-reward",
        choices=("em", "f1"),
        default=GRPO_RECIPE.env.reward,
        help="the env's reward in GRPO (f1: partial credit); evaluation reports both",
    )
    add_question_groups(p)
    add_retrieval_bonus(p, GRPO_RECIPE.retrieval_bonus)
    p.add_argument(
        "--own-starts",
        type=int,
        default=None,
        help="GRPOConfig.own_starts: the SFT policy plays one episode of this many of GRPO's "
        "candidates, and GRPO trains on those it answered after its own searches showed a gold "
        "answer, each group started from that episode's turns before its answer (no probe); 0: "
        "off, GRPO from scratch (default: the profile's; configs/learn/grpo.yaml's on the GPU)",
    )
    p.add_argument(
        "--own-share",
        type=float,
        default=GRPO_RECIPE.own_share,
        help="GRPOConfig.own_share: under --own-starts, the share of groups started from the "
        "own episode, the rest played from scratch",
    )
    p.add_argument(
        "--even-sources",
        action=argparse.BooleanOptionalAction,
        default=GRPO_RECIPE.even_sources,
        help="GRPOConfig.even_sources: --own-starts draws as many questions from each training "
        "file (synthesized, HotpotQA, MuSiQue) instead of 3/4 synthesized",
    )
    p.add_argument(
        "--teacher-starts",
        type=float,
        default=GRPO_RECIPE.teacher_starts,
        help="share of GRPO's groups that start from the teacher's turns before its answer "
        "(its SFT data; agent.train.starts): the policy has read the page and answers from there; "
        "at 1, every group, and the pass-rate probe is skipped; then nothing rewards searching first, "
        "and in two of three 28-step runs the policy stopped searching (docs/learning-log.md)",
    )
    p.add_argument("--group-size", type=int, default=None)
    p.add_argument("--dev-every", type=int, default=None)
    p.add_argument(
        "--health-questions",
        type=int,
        default=None,
        help="GRPOConfig.health_questions, the collapse guard: training questions played greedily "
        "before GRPO and every --health-every steps; where the share unanswered rises more than "
        "--health-margin, GRPO stops at the last weights that passed (0: off; default: the profile's)",
    )
    p.add_argument("--health-every", type=int, default=None)
    p.add_argument("--health-margin", type=float, default=GRPO_RECIPE.health_margin)
    p.add_argument(
        "--health-retries",
        type=int,
        default=GRPO_RECIPE.health_retries,
        help="GRPOConfig.health_retries: failed checks GRPO goes on from, back at the last weights "
        "that passed, before one stops it",
    )
    p.add_argument(
        "--dev-per-set", type=int, default=None, help="held-out questions per set in the GRPO curve"
    )
    p.add_argument(
        "--pass-samples",
        type=int,
        default=None,
        help="sampled episodes per task for pass@1 (0: none)",
    )
    p.add_argument("--lora-rank", type=int, default=SFT_RECIPE.lora_rank)
    p.add_argument("--micro-batch", type=int, default=None)
    p.add_argument("--eval-batch", type=int, default=None)
    p.add_argument("--max-turns", type=int, default=GRPO_RECIPE.env.max_turns)
    p.add_argument("--max-new-tokens", type=int, default=GRPO_RECIPE.max_new_tokens)
    p.add_argument(
        "--think-budget",
        type=int,
        default=GRPO_RECIPE.think_budget,
        help="tokens a turn's <think> may take before the model is given </think> (budget forcing, "
        "SamplingConfig.think_budget), in every model's evaluation and in GRPO's rollouts (0: none)",
    )
    p.add_argument("--max-context", type=int, default=GRPO_RECIPE.max_context_tokens)
    p.add_argument(
        "--retriever",
        choices=RETRIEVERS,
        default=None,
        help="the search tool's retriever in every stage (unset: configs/learn's, "
        f"{ENV['retriever']}, and with --reevaluate the runs' own: a retriever asked there is a "
        f"backend swapped under the checkpoints; the env's own default is {DEFAULT_RETRIEVER}, "
        "which builds the index's dense part once)",
    )
    p.add_argument(
        "--presence-penalty",
        type=float,
        default=None,
        help="every model's evaluation subtracts this from the logit of each id its turn has "
        "generated (SamplingConfig.presence_penalty; Tongyi DeepResearch's harness: 1.1); GRPO's "
        "rollouts keep 0. Unset: 0, and with --reevaluate the runs' own",
    )
    p.add_argument(
        "--decode-dtype",
        choices=DECODE_DTYPES,
        default=GRPO_RECIPE.decode_dtype,
        help="what every model's evaluation and GRPO's rollouts, checks and dev points decode in "
        "(SamplingConfig.decode_dtype): bfloat16 decodes from a bf16 copy of the weights",
    )
    p.add_argument(
        "--mixed-precision",
        choices=get_args(Precision),
        default=GRPO_RECIPE.mixed_precision,
        help="SFT's and GRPO's updates (TrainConfig.mixed_precision; auto: bf16 on a GPU that has "
        "it, else fp32)",
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="wall-clock budget of the whole run, shared equally by the seeds left: each "
        "seed's GRPO runs as many of --grpo-steps as fit in its share (0: all of them)",
    )
    add_gpu_memory_fraction(p)
    p.add_argument(
        "--untrained",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="evaluate the untrained model (seeds side by side: one process does it, "
        "--combine gives it to the others)",
    )
    p.add_argument(
        "--sft-from",
        default="",
        help="an earlier run's folder (bench/results/NAME) whose seeds' teacher episodes, SFT "
        "weights and SFT evals this run reuses: GRPO ablations from one SFT (its SFT and eval "
        "flags must be this run's)",
    )
    p.add_argument(
        "--sft-only",
        action="store_true",
        help="stop each seed after its SFT and SFT eval and write only the folder `--sft-from` "
        "reads: one SFT for the GRPO runs of later processes, no untrained eval, no report",
    )
    p.add_argument(
        "--save-every",
        type=int,
        default=None,
        help="GRPO steps between checkpoints, which --resume goes on from (only the newest is "
        "kept: ~540 MB for SmolLM2; 0: the last step's only; default: the profile's, 4 on CPU)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on with an interrupted run of the same --name and flags (and --sft-from, if it "
        "had one): the seeds its partial.json holds are kept; each other seed whose SFT and SFT "
        "eval ended (or came from --sft-from) keeps them, and its GRPO goes on from its newest "
        "checkpoint (--save-every) to the weights an uninterrupted run ends with",
    )
    p.add_argument("--name", default="", help="results name (default learn_agent[_quick])")
    p.add_argument(
        "--combine",
        nargs="+",
        help="merge these results JSONs (seeds run as separate processes) into one report: each "
        "seed once, the same method flags",
    )
    p.add_argument(
        "--untrained-from",
        metavar="REPORT_JSON",
        default="",
        help="with --combine, when no part evaluated the untrained model: take its eval from this "
        "finished report (the same eval flags and --eval-limit), instead of running it again",
    )
    p.add_argument(
        "--reevaluate",
        metavar="RUN_JSON",
        nargs="+",
        help="evaluate finished runs' checkpoints again (search-answer, untrained, each seed's "
        "SFT and GRPO) on --eval-limit questions a held-out set (0: every one), with the runs' "
        "own settings but a --presence-penalty or --retriever given, and report them as one "
        "run (runs made in parts: each seed once, the same eval settings)",
    )
    return p


def settings(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags as a run uses them: what the command line leaves unset, its profile sets."""
    args = arguments().parse_args(argv)
    # within 15 minutes on 2 cores: 14.0 on session 64's AVX2-only EPYC (session 65), where the
    # guard's checks made it 15.8 and 16 own episodes with micro-batches of 2 16.5 (what each
    # stage costs: docs/learning-log.md)
    quick = {
        "seeds": [0],
        "eval_limit": 2,  # every eval is compute-bound: its time goes with its questions
        "sft_questions": 80,  # ~30 the teacher answers: GRPO's candidates
        "samples_per_question": 2,
        "sft_steps": 16,  # at 8 (research-known teacher) the SFT policy answered without searching
        "sft_batch": 4,
        "grpo_steps": 2,
        "questions_per_step": 2,
        "probe_questions": 4,
        "own_starts": 8,  # 8 played start 4 questions (16 started 9); 2 steps use 3
        "group_size": 4,
        "dev_every": 0,  # the GRPO eval right after the last step is the held-out point
        # no collapse guard: on 4 questions one left unanswered (0.25) is past its 0.15 margin,
        # so a check stopped GRPO on noise; the checks of 4 cost 66 s of quick's 15 minutes
        "health_questions": 0,
        "health_every": 2,
        "dev_per_set": 1,
        "pass_samples": 0,
        "micro_batch": 1,  # SFT 338 s against 399 s at 2 (no row padded; the same SFT eval)
        "eval_batch": 32,  # the 10 held-out questions in one batch
        "deadline_s": 0,
        "save_every": 0,
        "dynamic_rounds": 0,  # a budget here: the method's 2 more rounds a step would up to
        # treble the sampling of GRPO's two steps
    }
    # the run README's table reports: 3 seeds, 28 GRPO steps, every held-out question, ~4 hours
    # on 2 cores. Session 55 ran the 2-hour budget this profile had (24 questions a set, GRPO to
    # a 6,900 s deadline): the evals and SFT left GRPO one step a seed, a GRPO that is not the
    # method's (docs/learning-log.md); --deadline-s still sets such a budget, and says so
    cpu = {
        "seeds": [0, 1, 2],
        "eval_limit": 0,
        "sft_questions": 0,
        "samples_per_question": 1,
        "sft_steps": 16,  # 16, 48 and 108 steps score alike on 96 held-out questions (docs/learning-log.md)
        "sft_batch": 4,
        "grpo_steps": 28,  # 14 steps gained less than half as much (README)
        "questions_per_step": 2,
        "probe_questions": 8,
        "own_starts": 96,  # ~10 min to play here; ~48 start, for 28 steps of 2 questions
        "group_size": 8,
        "dev_every": 4,  # a held-out point every 4th step (~60 s each)
        "health_questions": 16,  # ~30 s a check here; seed 2 collapsed in sessions 38 and 39
        "health_every": 4,
        "dev_per_set": 1,
        "pass_samples": 0,
        "micro_batch": 2,
        "eval_batch": 60,  # the 171 held-out questions in three batches
        "deadline_s": 0,
        "save_every": 4,  # ~1 hour a seed's GRPO: --resume goes on from the last 4th step
        "teacher_seed": 0,  # one bank of teacher episodes: SFT's spread went (session 59)
        "dynamic_rounds": GRPO_RECIPE.dynamic_rounds,
    }
    gpu = {
        "seeds": [0, 1, 2],
        "eval_limit": 0,
        "sft_questions": 0,
        "samples_per_question": 4,
        "sft_steps": 0,
        "sft_batch": 16,
        "grpo_steps": 40,
        "questions_per_step": 8,
        "probe_questions": 96,
        "own_starts": GRPO_RECIPE.own_starts,
        "group_size": 8,
        "dev_every": 10,
        "health_questions": GRPO_RECIPE.health_questions,
        "health_every": GRPO_RECIPE.health_every,
        "dev_per_set": 6,
        "pass_samples": 2,
        "micro_batch": 4,  # SFT's activations at 16 outgrow a third of an H100 (seeds side by side)
        "eval_batch": 64,
        "deadline_s": 0,
        "save_every": 0,
        "dynamic_rounds": GRPO_RECIPE.dynamic_rounds,
    }
    if args.quick:
        args.profile = "quick"
    args.profile = args.profile or ("gpu" if args.device.startswith("cuda") else "cpu")
    for k, v in {"quick": quick, "cpu": cpu, "gpu": gpu}[args.profile].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.teacher_seed == OWN_BANK:
        args.teacher_seed = None
    for k in OVERRIDES_ON_REEVALUATION:  # unset: the method's, or under --reevaluate the runs'
        if getattr(args, k) is None and not args.reevaluate:
            setattr(args, k, BEFORE_THE_FLAG[k])
    return args


def main() -> None:
    args = settings()
    if args.sft_only and args.sft_from:
        raise SystemExit(f"--sft-only with --sft-from: {args.sft_from} has its SFT already")
    if args.sft_only and (args.combine or args.reevaluate):
        raise SystemExit("--sft-only trains; --combine and --reevaluate report finished runs")
    torch.set_num_threads(args.threads)
    cap_gpu_memory(args.gpu_memory_fraction, args.device)
    name = (
        args.name
        or {"quick": "learn_agent_quick", "cpu": "learn_agent_cpu", "gpu": "learn_agent"}[
            args.profile
        ]
    )
    if args.combine:
        combine(args.combine, name, args.untrained_from)
        return
    if args.reevaluate:
        reevaluate(args, name)
        return
    if args.resume and not (RESULTS / name).is_dir():
        raise SystemExit(f"--resume: there is no run {RESULTS / name} to go on with")
    t0, started = time.perf_counter(), time.time()
    data = load_data(args.eval_limit)
    finished = finished_seeds(RESULTS / name, vars(args)) if args.resume else {}
    if not args.resume:
        shutil.rmtree(RESULTS / name, ignore_errors=True)
    bench = Bench(args, data, RESULTS / name)
    # an SFT-only run's untrained eval would go unread: --sft-from reads no report
    baseline, untrained, times = bench.references(args.untrained and not args.sft_only)
    runs: list[dict] = []
    partial = {"args": vars(args), "runs": runs, "baseline": baseline, "times": times}
    if not args.resume:  # what --resume checks its flags against, should the first seed be cut
        (bench.out / "partial.json").write_text(json.dumps(partial, indent=1))
    for i, seed in enumerate(args.seeds):
        runs.append(finished.get(seed) or bench.seed(seed, untrained, len(args.seeds) - i))
        partial = {"args": vars(args), "runs": runs, "baseline": baseline, "times": times}
        (bench.out / "partial.json").write_text(json.dumps(partial, indent=1))
    if args.sft_only:
        print(f"wrote {bench.out}: its seeds' SFT, for GRPO with --sft-from {bench.out}")
        return
    if untrained is None:  # a part of a side-by-side run: --combine reports it with the others
        part = {
            **partial,
            "stage_wall_s": stage_times(times, runs),
            "wall_s": time.perf_counter() - t0,
            "span": [started, time.time()],
        }
        (RESULTS / f"{name}.json").write_text(json.dumps(part, indent=1))
        print(f"wrote {RESULTS / name}.json (no untrained eval): merge it with --combine")
        return
    report(
        vars(args),
        baseline,
        runs,
        times,
        time.perf_counter() - t0,
        [started, time.time()],
        RESULTS / name,
    )


def checkpoint(path: str, run_json: str) -> str:
    """A checkpoint a results JSON names, where it is now: as recorded, or at the same place
    under this checkout's `bench/results/` (the run may have been made in another clone)."""
    if Path(path).exists():
        return path
    parts = Path(path).parts
    if "results" not in parts:
        raise SystemExit(f"{run_json} names checkpoint {path}, which is not there")
    here = RESULTS.joinpath(*parts[len(parts) - parts[::-1].index("results") :])
    if not here.exists():
        raise SystemExit(f"{run_json} names checkpoint {path}, which is not there nor at {here}")
    return str(here)


def reevaluate(args: argparse.Namespace, name: str) -> None:
    """Finished runs' checkpoints on more held-out questions: training left out every held-out
    set's answers, asked or not (`load_data`), so any share of them may be asked. The runs' own
    settings (context, turns, decoding) are kept; only the questions change, and the presence
    penalty or the retriever where one is asked (a decoding the checkpoints were not trained
    under: Tongyi DeepResearch's harness samples with 1.1; a search backend swapped under an
    unchanged policy). Several runs (seeds
    run in parts, as `--combine` merges them) are one report: each seed once, and an error
    unless they share the method (`merged_runs`; the eval's size may differ, it is redone)."""
    files = list(args.reevaluate)
    sources, runs = merged_runs("--reevaluate", files, free=("eval_limit", "eval_batch"))
    seeds = [r["seed"] for r in runs]
    paths = {
        (r["seed"], s): checkpoint(r["checkpoints"][s], f)
        for f, src in zip(files, sources, strict=True)
        for r in src["runs"]
        for s in ("sft", "grpo")
    }
    out = RESULTS / name
    if any(Path(p).resolve().is_relative_to(out.resolve()) for p in paths.values()):
        raise SystemExit(
            f"--name {name} would overwrite the checkpoints it evaluates: pick another"
        )
    defaults = unrecorded()
    asked = ("eval_limit", "eval_batch", "device", "threads")
    # a decoding or a search backend the checkpoints never trained under, where one is asked
    asked = (*asked, *(k for k in OVERRIDES_ON_REEVALUATION if getattr(args, k) is not None))
    settings = {  # an eval flag the runs did not record reads as its default, as in `differing`
        **{k: defaults[k] for k in EVAL_FLAGS},
        **sources[0]["args"],
        **{k: getattr(args, k) for k in asked},
        "seeds": seeds,
        "reevaluate": files,
        "name": name,
    }
    t0, started = time.perf_counter(), time.time()
    shutil.rmtree(out, ignore_errors=True)
    bench = Bench(argparse.Namespace(**settings), load_data(args.eval_limit), out)
    baseline, untrained, times = bench.references(untrained=True)
    again = []
    for r in runs:
        row = {**r, "untrained": untrained, "time_s": dict(r["time_s"])}
        for s in ("sft", "grpo"):
            t = time.perf_counter()
            row[s] = bench.evaluate(s, paths[r["seed"], s], r["seed"])
            row["time_s"][f"eval {s}"] = time.perf_counter() - t
        again.append(row)
    report(
        settings,
        baseline,
        again,
        times,
        time.perf_counter() - t0,
        [started, time.time()],
        RESULTS / name,
    )


#: The flags a part of a run may set on its own (which seeds, where from, how long, on what):
#: every other flag is the method, and the parts of one report share it.
PART_FLAGS = (
    "seeds",
    "name",
    "sft_from",
    "untrained",
    "deadline_s",
    "threads",
    "gpu_memory_fraction",
    "combine",
    "reevaluate",
    "untrained_from",
    "resume",
    "save_every",
)


#: Flags whose default is no longer the behaviour before them: the unsearched penalty and the
#: guard's retries joined the method in session 53, and a part that ran before they were flags
#: ran without them; a run before `--presence-penalty` (whose unset value is "the runs' own"
#: under `--reevaluate`) evaluated without one.
BEFORE_THE_FLAG = {
    "unsearched_penalty": 0.0,
    "health_retries": 0,
    "presence_penalty": 0.0,
    "retriever": ENV["retriever"],
}
#: Eval flags whose default is None: a run takes `BEFORE_THE_FLAG`'s value, a `--reevaluate` the
#: runs' own unless one is asked (then the same checkpoints are evaluated under it).
OVERRIDES_ON_REEVALUATION = ("presence_penalty", "retriever")


def unrecorded() -> dict[str, Any]:
    """What a flag a run did not record reads as: this bench's default, or the behaviour before
    the flag (`BEFORE_THE_FLAG`)."""
    return {**vars(arguments().parse_args([])), **BEFORE_THE_FLAG}


def differing(files: list[str], parts: list[dict], flags: Iterable[str]) -> str:
    """The first of `flags` the parts' args disagree on, with each file's value ("" if none).
    A flag a part did not record was added after it ran, and reads as this bench's default: a
    flag is added with the behaviour before it as its default (`--refused-negative` off), or
    as `BEFORE_THE_FLAG` says where a later session changed its default."""
    defaults = unrecorded()
    for k in flags:
        values = [p["args"].get(k, defaults.get(k)) for p in parts]
        if len(set(map(repr, values))) > 1:
            return f"--{k.replace('_', '-')}: " + ", ".join(
                f"{f}: {v!r}" for f, v in zip(files, values, strict=True)
            )
    return ""


def method_differs(files: list[str], parts: list[dict], free: Iterable[str] = ()) -> str:
    """`differing` over the method: every flag a part recorded but those a part of one report
    may set on its own (`PART_FLAGS`) and `free`."""
    return differing(
        files, parts, sorted({k for p in parts for k in p["args"]} - {*PART_FLAGS, *free})
    )


def one_bank(parts: list[dict]) -> list[dict]:
    """The parts with `--teacher-seed N` set where a part ran only seed N on its own teacher
    episodes: that seed drew the very episodes `--teacher-seed N` gives every seed, so its part
    joins a report of that method."""
    banks = {p["args"].get("teacher_seed") for p in parts} - {None}
    if len(banks) != 1:
        return parts
    (bank,) = banks
    return [
        {**p, "args": {**p["args"], "teacher_seed": bank}}
        if p["args"].get("teacher_seed") is None and [r["seed"] for r in p["runs"]] == [bank]
        else p
        for p in parts
    ]


def merged_runs(
    flag: str, files: list[str], free: tuple[str, ...] = ()
) -> tuple[list[dict], list[dict]]:
    """The results JSONs a flag names, and their seeds' runs in order: an error if a seed is in
    more than one (a report has each seed once), or if the parts differ in a flag of the method
    (all but `PART_FLAGS` and `free`): one report is one method."""
    parts = one_bank([json.loads(Path(f).read_text()) for f in files])
    runs = [r for p in parts for r in p["runs"]]
    seeds = [r["seed"] for r in runs]
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise SystemExit(
            f"{flag} {' '.join(files)}: seed {', '.join(map(str, twice))} is in more than one "
            "part; give each seed once"
        )
    if differ := method_differs(files, parts, free):
        raise SystemExit(f"{flag}: the runs differ in {differ}")
    return parts, runs


class QuestionFill:
    """Per-question EM (`em_by_task`) for the stats of runs that predate it, read from the
    trajectories each eval left in its run's folder (`seedN/eval/STAGE`, `eval/untrained`;
    a reused SFT's in the folder `--sft-from` named) where that folder is still there: merged,
    such runs report the spread the held-out questions alone would give (`question_spread`)."""

    def __init__(self, eval_limit: int) -> None:
        self.ids = {k: set(v.ids()) for k, v in load_data(eval_limit).held.items()}

    def untrained(self, path: Path, part: dict) -> None:
        """The untrained eval of the run `path` names (one process ran it for every seed)."""
        for r in part["runs"]:
            self.stats(r["untrained"], path.with_suffix("") / "eval" / "untrained")

    def part(self, path: Path, part: dict) -> None:
        self.untrained(path, part)
        for r in part["runs"]:
            evals = path.with_suffix("") / f"seed{r['seed']}" / "eval"
            sft = Path(r["sft_from"]) / "eval" if r.get("sft_from") else evals
            self.stats(r.get("sft"), sft / "sft")
            self.stats(r.get("grpo"), evals / "grpo")

    def stats(self, stats: dict | None, where: Path) -> None:
        path = where / "trajectories.jsonl"
        if stats is None or all("em_by_task" in v for v in stats.values()) or not path.exists():
            return
        em = {t.task_id: t.metrics.get("em", 0.0) for t in read_trajectories(path)}
        for held, v in stats.items():
            if held in self.ids and self.ids[held] <= em.keys():  # else another eval's set
                v.setdefault("em_by_task", {t: em[t] for t in sorted(self.ids[held])})


def combine(files: list[str], name: str, untrained_from: str = "") -> None:
    """Seeds run as separate processes (side by side on one GPU, or in different sessions) in one
    report, each seed once; its args are the first part's, with the seeds and the parts merged.
    The untrained model's eval is a part's, or `untrained_from`'s (a report with the same eval)."""
    parts, runs = merged_runs("--combine", files)
    seeds = [r["seed"] for r in runs]
    times = {k: max(p["stage_wall_s"][k] for p in parts) for k in ("search-answer", "untrained")}
    fill = QuestionFill(parts[0]["args"].get("eval_limit", 0))
    for f, p in zip(files, parts, strict=True):
        fill.part(Path(f), p)
    evaluated = [r["untrained"] for r in runs if r["untrained"] is not None]
    if not evaluated and untrained_from:
        ref = json.loads(Path(untrained_from).read_text())
        eval_flags = (*EVAL_FLAGS, "eval_limit")
        if differ := differing([*files, untrained_from], [*parts, ref], eval_flags):
            raise SystemExit(f"--untrained-from: the eval differs in {differ}")
        fill.untrained(Path(untrained_from), ref)  # its SFT and GRPO are not this report's
        evaluated = [r["untrained"] for r in ref["runs"] if r["untrained"] is not None]
        times["untrained"] = ref["stage_wall_s"]["untrained"]
    if not evaluated:
        raise SystemExit(
            f"none of {files} evaluated the untrained model: run one without --no-untrained, "
            "or name a report that did with --untrained-from"
        )
    for r in runs:  # the untrained model's eval is the same for every seed: one process ran it
        r["untrained"] = r["untrained"] or evaluated[0]
    args = {**parts[0]["args"], "seeds": seeds, "combine": list(files)}
    report(
        {**args, "untrained_from": untrained_from} if untrained_from else args,
        parts[0]["baseline"],
        runs,
        times,
        *combined_wall(parts),
        RESULTS / name,
    )


if __name__ == "__main__":
    main()
