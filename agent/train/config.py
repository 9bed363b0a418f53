"""Trainer configs: frozen dataclasses, validated once, loadable from YAML, every field a flag.

Precedence is defaults < YAML file < command-line flags. Options with a fixed set of
values are `Literal`s, checked in `__post_init__` and offered as argparse `choices`.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

from wikisim.errors import ConfigError

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
    tasks: str = ""  # task-set file (JSONL) of training questions
    dev_tasks: str = ""  # task-set file of held-out questions for pass@k ("" = no dev eval)
    index: str = ""  # built index directory for WikiSim-v0 ("" = the bundled sample)
    retriever: str = "bm25s"  # search backend of the env
    max_turns: int = 4  # env turn budget per episode
    max_new_tokens: int = 96  # tokens the policy may sample per turn
    lr: float = 1e-3
    lr_schedule: Schedule = "constant"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0  # clip; the pre-clip norm is logged
    micro_batch_size: int = 8  # sequences per forward/backward; batches are accumulated to full size
    mixed_precision: Precision = "auto"  # bf16 where the device supports it, else fp32
    lora_rank: int = 0  # 0 = full fine-tuning; > 0 trains LoRA adapters through peft
    lora_alpha: int = 16
    save_every: int = 0  # optimizer steps between checkpoints (0 = only at the end)
    resume: bool = True  # continue from the newest checkpoint in output_dir if there is one
    cpu: bool = False  # force CPU even where an accelerator is present

    def __post_init__(self) -> None:
        _check_literals(self)
        for name in ("max_turns", "max_new_tokens", "micro_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 1")
        for name in ("lr", "max_grad_norm", "lora_alpha"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be > 0")
        for name in ("warmup_steps", "weight_decay", "lora_rank", "save_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 0")


@dataclass(frozen=True)
class SFTConfig(TrainConfig):
    """Rejection-sampled SFT: a teacher plays each question K times; correct trajectories are kept."""

    teacher: str = "oracle"  # policy name the agent package knows (oracle, search-answer, ...)
    samples_per_question: int = 4  # K teacher episodes per training question
    trajectories: str = ""  # train on this JSONL instead of sampling (written by a previous run)
    epochs: int = 3
    batch_size: int = 16  # sequences per optimizer step
    max_steps: int = 0  # > 0: end after this many optimizer steps even if epochs remain
    stop_loss: float = 0.0  # > 0: end once the mean loss of the last 5 steps falls below it (a cold start)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_steps < 0 or self.stop_loss < 0:
            raise ConfigError(f"max_steps={self.max_steps} and stop_loss={self.stop_loss} must be >= 0")
        for name in ("samples_per_question", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 1")


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
    exclude_truncated: bool = True  # conservative negatives: drop truncated rollouts without an answer
    clip_eps: float = 0.0  # > 0: PPO ratio clipping against the sampler's log-probs
    kl_coef: float = 0.0  # > 0: k3 KL to the frozen initial weights
    format_penalty: float = 0.0  # subtracted from the reward of rollouts without a well-formed answer
    entropy_coef: float = 0.0  # entropy bonus; logged either way, off by default as in the paper
    dev_every: int = 10  # steps between dev evaluations (0 = never)
    dev_k: int = 4  # samples per dev question for pass@k
    curriculum: bool = False  # retire always/never-solved questions and top the pool up
    pool_size: int = 32  # active questions when the curriculum is on
    retire_after: int = 16  # rollouts seen before a question may be retired
    band_low: float = 0.0  # a question stays while low < pass rate < high
    band_high: float = 1.0
    generation_server: str = ""  # base URL (up to /v1) of a server that samples rollouts; "" = in-process
    server_model: str = "policy"  # the model name that server expects
    sync_dir: str = ""  # where weights are saved for the server to reload ("" = output_dir/sync)
    sync_protocol: str = "sglang"  # how that server reloads them: one of SYNC_PROTOCOLS (see agent.train.weight_sync)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.generation_server and not self.generation_server.startswith(("http://", "https://")):
            raise ConfigError(f"generation_server={self.generation_server!r} must start with http:// or https://, "
                              "e.g. http://127.0.0.1:8000/v1")
        if self.sync_protocol not in SYNC_PROTOCOLS:
            raise ConfigError(f"sync_protocol={self.sync_protocol!r} must be one of {SYNC_PROTOCOLS}")
        for name in ("steps", "questions_per_step", "pool_size", "retire_after", "dev_k"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 1")
        if self.group_size < 2:
            raise ConfigError(f"group_size={self.group_size} must be >= 2: a group baseline needs other rollouts")
        if self.temperature <= 0:
            raise ConfigError(f"temperature={self.temperature} must be > 0: GRPO needs sampled, not greedy, rollouts")
        for name in ("clip_eps", "kl_coef", "format_penalty", "entropy_coef", "dev_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 0")
        if not 0.0 <= self.band_low < self.band_high <= 1.0:
            raise ConfigError(f"need 0 <= band_low < band_high <= 1, got {self.band_low}, {self.band_high}")
        if self.clip_eps and self.temperature != 1.0:
            raise ConfigError(f"clip_eps={self.clip_eps} compares with the sampler's log-probs, which are tempered: "
                              f"set temperature=1 (got {self.temperature}) or clip_eps=0")


C = TypeVar("C", bound=TrainConfig)


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_literals(cfg: Any) -> None:
    for name, tp in _field_types(type(cfg)).items():
        if typing.get_origin(tp) is Literal and getattr(cfg, name) not in typing.get_args(tp):
            raise ConfigError(f"{name}={getattr(cfg, name)!r} is not one of {list(typing.get_args(tp))}")


def add_config_arguments(parser: argparse.ArgumentParser, cls: type[TrainConfig]) -> None:
    """One `--field-name` flag per config field; unset flags stay None so YAML values survive."""
    parser.add_argument("--config", type=Path, default=None, help="YAML file of settings (flags override it)")
    hints = _field_types(cls)
    for f in fields(cls):
        tp = hints[f.name]
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        if tp is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None,
                                help=f"(default {default})")
        elif typing.get_origin(tp) is Literal:
            parser.add_argument(flag, dest=f.name, choices=list(typing.get_args(tp)), default=None,
                                help=f"(default {default})")
        else:
            parser.add_argument(flag, dest=f.name, type=_scalar(tp, f.name), default=None, help=f"(default {default!r})")


def _scalar(tp: Any, name: str) -> type:
    if isinstance(tp, types.UnionType) or tp not in (int, float, str):
        raise ConfigError(f"config field {name} has type {tp}; flags support int, float, str, bool and Literal")
    return tp


def load_config(cls: type[C], path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> C:
    """Build `cls` from defaults, then a YAML file, then overrides (None values ignored)."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(f"config {path} must be a mapping of setting: value, got {type(loaded).__name__}")
        values.update({str(k).replace("-", "_"): v for k, v in loaded.items()})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown} for {cls.__name__}; known: {sorted(known)}")
    hints = _field_types(cls)
    for k, v in values.items():
        if hints[k] is float and isinstance(v, int) and not isinstance(v, bool):
            values[k] = float(v)
        elif hints[k] in (int, float, str, bool) and not isinstance(v, hints[k]):
            raise ConfigError(f"setting {k}={v!r} must be a {hints[k].__name__}")
    return cls(**values)


def config_from_args(cls: type[C], args: argparse.Namespace) -> C:
    names = {f.name for f in fields(cls)}
    return load_config(cls, args.config, {k: v for k, v in vars(args).items() if k in names})


def save_config(cfg: TrainConfig, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=True), encoding="utf-8")
