"""Trainer configs: frozen dataclasses, validated once, loadable from YAML, every field a flag.

The env a run trains in is an `EnvConfig` nested as `env`, with the env's own defaults (the
paper's); its settings are flat flags and YAML keys like the trainer's own (`--max-turns 4`,
`max_turns: 4`, or `env: {max_turns: 4}`), and its `tasks` are the training questions.

Flags and YAML come from `wikisim.flags` (defaults < YAML file < command-line flags), as for
every command. Options with a fixed set of values are `Literal`s, checked in `__post_init__`
and offered as argparse `choices`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

import yaml

from agent.rollout.policies.base import DecodeDtype
from agent.rollout.react import Budget
from wikisim.checks import above, at_least, check_literals
from wikisim.env.config import EnvConfig
from wikisim.errors import ConfigError
from wikisim.flags import config_to_dict, load_config
from wikisim.paths import REPO_ROOT

Schedule = Literal["constant", "linear", "cosine"]
Precision = Literal["auto", "no", "bf16"]
Advantage = Literal["leave_one_out", "std_normalized"]
AggregationName = Literal["token", "sequence"]


@dataclass(frozen=True)
class TrainConfig:
    """Settings every training run shares."""

    output_dir: str = "runs/train"  # checkpoints, metrics.jsonl, curves.png
    seed: int = 0  # the one seeding point: weights of a from-config model, data order, sampling
    model: str = "tiny"  # "tiny" (from config), "smollm2" (bundled), or a saved transformers folder
    env: EnvConfig = field(
        default_factory=EnvConfig
    )  # the env episodes run in (its `tasks`: the training questions)
    system_prompt: str = (
        ""  # replaces the env's: "short" (one line, for tiny models) or the text itself
    )
    dev_tasks: str = ""  # held-out questions for pass@k, written as `tasks` is ("" = no dev eval)
    max_new_tokens: int = Budget.max_new_tokens  # tokens the policy may sample per turn
    # tokens a turn's <think> may take before the policy is given </think> (budget forcing,
    # SamplingConfig.think_budget; given ids are never trained on); 0: no limit
    think_budget: int = 0
    max_context_tokens: int = Budget.max_context_tokens  # prompt + turns + observations per episode
    lr: float = 1e-3
    lr_schedule: Schedule = "constant"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0  # clip; the pre-clip norm is logged
    micro_batch_size: int = (
        8  # sequences per forward/backward; batches are accumulated to full size
    )
    mixed_precision: Precision = "auto"  # bf16 where the device supports it, else fp32
    # what the in-process sampler decodes in (rollouts, checks, dev evals): bfloat16 samples from
    # a bf16 copy of the weights trained (SamplingConfig.decode_dtype); under GRPO's clip_eps the
    # ratio then holds the bf16 sampler's log-probs against the fp32 weights', as a server's would
    decode_dtype: DecodeDtype = "float32"
    lora_rank: int = 0  # 0 = full fine-tuning; > 0 trains LoRA adapters through peft
    lora_alpha: int = 16
    save_every: int = 0  # optimizer steps between checkpoints (0 = only at the end)
    # > 0: after each save only the newest this many checkpoints stay (a checkpoint holds the
    # model and the optimizer's moments: ~540 MB for SmolLM2); 0 keeps every one
    keep_checkpoints: int = 0
    resume: bool = True  # continue from the newest checkpoint in output_dir if there is one
    cpu: bool = False  # force CPU even where an accelerator is present

    def __post_init__(self) -> None:
        check_literals(self)
        at_least(
            type(self).__name__,
            1,
            max_new_tokens=self.max_new_tokens,
            micro_batch_size=self.micro_batch_size,
            max_context_tokens=self.max_context_tokens,
        )
        above(
            type(self).__name__,
            0,
            lr=self.lr,
            max_grad_norm=self.max_grad_norm,
            lora_alpha=self.lora_alpha,
        )
        at_least(
            type(self).__name__,
            0,
            warmup_steps=self.warmup_steps,
            weight_decay=self.weight_decay,
            lora_rank=self.lora_rank,
            save_every=self.save_every,
            keep_checkpoints=self.keep_checkpoints,
            think_budget=self.think_budget,
        )


@dataclass(frozen=True)
class SFTConfig(TrainConfig):
    """Rejection-sampled SFT: a teacher plays each question K times; correct trajectories are kept."""

    # research or research-known (agent.train.teachers, known_only), oracle, search-answer, or any policy name
    teacher: str = "oracle"
    samples_per_question: int = 4  # K teacher episodes per training question
    # at most this share of the kept episodes answer after one tool call (agent.train.sft.cap_direct)
    direct_share: float = 1.0
    # this share of research-teacher episodes opens with a broken call and recovers from its error
    recover_share: float = 0.0
    # research teachers search at least this often before answering, each time typed another way
    min_searches: int = 1
    # research teachers type copies: the question less what no page states, then titles shown
    copy_queries: bool = False
    trajectories: str = ""  # train on this JSONL instead of sampling (written by a previous run)
    epochs: int = 3
    batch_size: int = 16  # sequences per optimizer step
    max_steps: int = 0  # > 0: end after this many optimizer steps even if epochs remain
    stop_loss: float = (
        0.0  # > 0: end once the mean loss of the last 5 steps falls below it (a cold start)
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.direct_share <= 1:
            raise ConfigError(f"direct_share={self.direct_share} must be in (0, 1]")
        if not 0 <= self.recover_share < 1:
            raise ConfigError(f"recover_share={self.recover_share} must be in [0, 1)")
        if not 1 <= self.min_searches < self.env.max_turns:
            raise ConfigError(
                f"min_searches={self.min_searches} must be in [1, max_turns={self.env.max_turns})"
            )
        if self.max_steps < 0 or self.stop_loss < 0:
            raise ConfigError(
                f"max_steps={self.max_steps} and stop_loss={self.stop_loss} must be >= 0"
            )
        at_least(
            type(self).__name__,
            1,
            samples_per_question=self.samples_per_question,
            epochs=self.epochs,
            batch_size=self.batch_size,
        )


#: Wire formats a generation server can be told to reload a checkpoint in (agent.train.weight_sync).
SYNC_PROTOCOLS = ("sglang", "vllm")


@dataclass(frozen=True)
class GRPOConfig(TrainConfig):
    """Strictly on-policy GRPO as WebSailor-V2 specifies; every ablation is one field."""

    lr: float = 1e-4
    init_checkpoint: str = ""  # start from these weights (an SFT run's output_dir/final)
    steps: int = 50  # optimizer steps; each one samples a fresh batch with the current weights
    questions_per_step: int = 8
    group_size: int = 8  # G rollouts per question
    temperature: float = 1.0
    advantage: Advantage = "leave_one_out"  # "std_normalized" = standard GRPO
    aggregation: AggregationName = "token"  # "sequence" = standard GRPO (mean per sequence first)
    exclude_truncated: bool = (
        True  # conservative negatives: drop truncated rollouts without an answer
    )
    # under exclude_truncated, a rollout that spent every turn on well-formed tool calls without
    # answering stays in the loss as a negative: only wrong answers were pushed down otherwise,
    # and a CPU seed's own-start GRPO learned to visit until its turns ran out (36 of 60 held-out
    # episodes unanswered after 12 steps, against 2 after SFT; docs/learning-log.md, session 35)
    unanswered_negative: bool = False
    # under exclude_truncated, a rollout that ran out of turns the policy ended itself, some of
    # them refused by the env (a forged `<tool_response>`, a call that is not JSON), stays in the
    # loss as a negative too: left out as "cut by a limit", a CPU seed's refused turns rose
    # unchecked late in GRPO until the collapse guard stopped it (16 such rollouts of seed 2's
    # 384, 0 in the loss; docs/learning-log.md, session 47)
    refused_negative: bool = False
    clip_eps: float = 0.0  # > 0: PPO ratio clipping against the sampler's log-probs
    kl_coef: float = 0.0  # > 0: k3 KL to the frozen initial weights
    format_penalty: float = (
        0.0  # subtracted from the reward of rollouts without a well-formed answer
    )
    grounded_only: bool = False  # an answer not read in an observation earns no reward: on a small
    # training set GRPO otherwise learns to recall its answers and stop searching
    retrieval_bonus: float = 0.0  # added to the reward of a rollout whose own tool calls put a
    # gold answer in an observation (metrics["retrieved"]): the answer reward pays only reading, so
    # without it nothing holds up the searching that reading needs
    echo_penalty: float = 0.0  # subtracted from a wrong answer that is words of the question
    # (metrics["echo"]): a small policy that misses the answer falls back on an entity the question
    # names (32-58% of the CPU SFT adapter's wrong answers), and every wrong answer earning 0 gives
    # a group of them nothing to prefer a reading over that echo
    malformed_penalty: float = 0.0  # subtracted from a rollout that made a call the env could
    # not run as written (metrics["malformed"]: `visit {"query": ...}`): answered after one, it
    # earned as much as a clean wrong answer and more than the loop it leads to, and seed 2 drifted
    # into that loop in sessions 22 and 38-40
    unsearched_penalty: float = 0.0  # subtracted from a rollout played from the question that
    # answered without a search call: paid nothing under grounded_only, as a search that finds
    # nothing is, it cost nothing either, and seed 1 drifted into answering from memory by step 28
    # (session 50: 0.08 searches an episode held out)
    entropy_coef: float = 0.0  # entropy bonus; logged either way, off by default as in the paper
    shared_prefix: bool = True  # a question's rows run past the prefix they share (prompt, teacher
    # turns), whose forward and backward run once per group (agent.train.prefix; one process only)
    dev_every: int = 10  # steps between dev evaluations (0 = never)
    dev_k: int = 4  # samples per dev question for pass@k
    # the collapse guard (agent.train.health): > 0 plays this many training questions greedily
    # before step 1 and every health_every steps; where the share left unanswered, or the share
    # without a search, has risen by more than health_margin over the starting weights', the run
    # stops and keeps the weights of its last healthy check
    health_questions: int = 0
    health_every: int = 4
    health_margin: float = 0.25
    # > 0: a failed check rolls the weights back to the last passed check (the optimizer's moments
    # cleared) and GRPO goes on with the next steps' fresh samples, at most this many times; the
    # next failure, or one at the last step, stops it. A stop turns one bad early draw into a gain
    # of 0: seed 1 on another CPU looped by step 4 where the same seed had not (session 49)
    health_retries: int = 0
    # > 0: dynamic sampling (DAPO), within a budget: a step with fewer than questions_per_step
    # groups that both solved and failed plays up to this many more rounds of questions_per_step
    # other questions, and trains on the groups of those rounds that did both, until it has
    # questions_per_step such groups. Its own groups all stay (their penalties still teach); the
    # rest of an extra round only counts as seen. Under starts an extra group starts (it samples
    # only its answer turn). From a weak SFT policy most groups score all wrong, and how many do
    # not varied 13-22 steps of 28 between CPU seeds whose gains were -0.006 to +0.099
    dynamic_rounds: int = 0
    curriculum: bool = False  # retire always/never-solved questions and top the pool up
    probe_questions: int = 0  # > 0: first sample this many training questions from the starting
    # weights; their pass rates start the curriculum on the ones sometimes solved (needs curriculum)
    probe_samples: int = 4  # rollouts per probed question
    pool_size: int = 32  # active questions when the curriculum is on
    retire_after: int = 16  # rollouts seen before a question may be retired
    question_rollouts: int = 0  # > 0: a question leaves the pool after this many rollouts, in band
    # or not, until no fresh one is left: GRPO on a few in-band questions memorises their answers
    band_low: float = 0.0  # a question stays while low < pass rate < high
    band_high: float = 1.0
    teacher_starts: float = 0.0  # share of each step's questions whose group starts from a teacher
    # episode's turns before its answer (reverse curriculum; agent.train.starts), the rest from scratch
    teacher_data: str = ""  # trajectories to start from (e.g. the SFT run's rejection-sampled data)
    # own_starts > 0: before step 1 the starting weights play one episode of this many training
    # questions (drawn by the seed); those answered after their own searches showed a gold answer
    # are the run's questions, every group started from that episode's turns before its answer
    # (GRPO on the policy's reading, in its own states: agent.train.starts); own_starts.jsonl
    own_starts: int = 0
    # under own_starts, the share of each step's questions whose group starts from that episode;
    # the rest play from scratch, where the retrieval bonus and the answer still pay for searching
    own_share: float = 1.0
    # under own_starts, draw its questions evenly from each source of `tasks` (each file, or slice
    # of one), not in proportion to their sizes
    even_sources: bool = False
    generation_server: str = (
        ""  # base URL (up to /v1) of a server that samples rollouts; "" = in-process
    )
    server_model: str = "policy"  # the model name that server expects
    sync_dir: str = ""  # where weights are saved for the server to reload ("" = output_dir/sync)
    sync_protocol: str = "sglang"  # how that server reloads them: one of SYNC_PROTOCOLS (see agent.train.weight_sync)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.generation_server and not self.generation_server.startswith(
            ("http://", "https://")
        ):
            raise ConfigError(
                f"generation_server={self.generation_server!r} must start with http:// or https://, "
                "e.g. http://127.0.0.1:8000/v1"
            )
        if self.generation_server and self.think_budget:
            raise ConfigError(
                f"think_budget={self.think_budget} is applied by the in-process sampler; a "
                "generation_server samples whole turns: set think_budget=0 or drop the server"
            )
        if self.sync_protocol not in SYNC_PROTOCOLS:
            raise ConfigError(
                f"sync_protocol={self.sync_protocol!r} must be one of {SYNC_PROTOCOLS}"
            )
        at_least(
            type(self).__name__,
            1,
            steps=self.steps,
            questions_per_step=self.questions_per_step,
            pool_size=self.pool_size,
            retire_after=self.retire_after,
            dev_k=self.dev_k,
        )
        if self.group_size < 2:
            raise ConfigError(
                f"group_size={self.group_size} must be >= 2: a group baseline needs other rollouts"
            )
        if not 0.0 <= self.teacher_starts <= 1.0:
            raise ConfigError(f"teacher_starts={self.teacher_starts} must be a share in [0, 1]")
        if self.own_starts < 0:
            raise ConfigError(f"own_starts={self.own_starts} must be >= 0 (0: off)")
        if not 0.0 <= self.own_share <= 1.0:
            raise ConfigError(f"own_share={self.own_share} must be a share in [0, 1]")
        if self.own_share != 1.0 and not self.own_starts:
            raise ConfigError(
                f"own_share={self.own_share} is the share of groups started from the policy's own "
                "episodes: set own_starts (how many training questions it plays first) as well"
            )
        if self.even_sources and not self.own_starts:
            raise ConfigError(
                "even_sources draws own_starts' questions evenly from each task source: set "
                "own_starts (how many training questions the policy plays first) as well"
            )
        if self.own_starts and self.teacher_starts:
            raise ConfigError(
                f"own_starts={self.own_starts} and teacher_starts={self.teacher_starts}: a run "
                "starts its groups from the policy's own episodes or from a teacher's, not both"
            )
        if self.teacher_starts and not self.teacher_data:
            raise ConfigError(
                f"teacher_starts={self.teacher_starts} needs teacher_data: a trajectories file "
                "to start from (e.g. the rejection-sampled SFT data)"
            )
        if self.temperature <= 0:
            raise ConfigError(
                f"temperature={self.temperature} must be > 0: GRPO needs sampled, not greedy, rollouts"
            )
        at_least(
            type(self).__name__,
            0,
            clip_eps=self.clip_eps,
            kl_coef=self.kl_coef,
            format_penalty=self.format_penalty,
            retrieval_bonus=self.retrieval_bonus,
            echo_penalty=self.echo_penalty,
            malformed_penalty=self.malformed_penalty,
            unsearched_penalty=self.unsearched_penalty,
            entropy_coef=self.entropy_coef,
            dev_every=self.dev_every,
            question_rollouts=self.question_rollouts,
            health_questions=self.health_questions,
            health_retries=self.health_retries,
            dynamic_rounds=self.dynamic_rounds,
        )
        at_least(type(self).__name__, 1, health_every=self.health_every)
        if not 0.0 <= self.health_margin < 1.0:
            raise ConfigError(
                f"health_margin={self.health_margin} must be a share in [0, 1): the rise in "
                "unanswered health-check episodes that stops the run"
            )
        if self.probe_questions and not self.curriculum:
            raise ConfigError(
                f"probe_questions={self.probe_questions} seeds the curriculum: set curriculum=true"
            )
        at_least(type(self).__name__, 0, probe_questions=self.probe_questions)
        at_least(type(self).__name__, 2, probe_samples=self.probe_samples)
        if not 0.0 <= self.band_low < self.band_high <= 1.0:
            raise ConfigError(
                f"need 0 <= band_low < band_high <= 1, got {self.band_low}, {self.band_high}"
            )
        if self.clip_eps and self.temperature != 1.0:
            raise ConfigError(
                f"clip_eps={self.clip_eps} compares with the sampler's log-probs, which are tempered: "
                f"set temperature=1 (got {self.temperature}) or clip_eps=0"
            )


def save_config(cfg: TrainConfig, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(config_to_dict(cfg), sort_keys=True), encoding="utf-8")


R = TypeVar("R", SFTConfig, GRPOConfig)


def recipe(cls: type[R]) -> R:
    """The learning method's checked-in config of `cls`'s stage (`configs/learn/sft.yaml`,
    `grpo.yaml`: what `wikisim train STAGE --config` reads), for the demo, the bench and the
    tests to read one copy."""
    stage = cls.__name__.removesuffix("Config").lower()
    return load_config(cls, REPO_ROOT / "configs" / "learn" / f"{stage}.yaml", {})
