"""What SFT and GRPO share: model loading, Accelerate setup, batching, checkpoints, metric logs.

A run directory holds `config.yaml`, `metrics.jsonl` (one JSON object per optimizer step),
`checkpoints/step-N/` (Accelerate state + `trainer_state.json`), `final/` (a transformers
folder that `agent.rollout.models.load_local` and the policies read), `curves.png`, and for
RL `rollouts/` (each step's sampled trajectories).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from transformers import PreTrainedModel

from agent.rollout.trajectory import Trajectory, write_trajectories
from agent.train.config import TrainConfig, save_config
from wikisim.errors import ConfigError


def load_model(cfg: TrainConfig, init: str = ""):
    """(tokenizer, model) for training: `init` (a saved folder) wins over `cfg.model`."""
    from agent.rollout.models import adapter_base, is_adapter, load_local, load_smollm2, tiny_model

    if (
        init and cfg.lora_rank and is_adapter(init)
    ):  # go on training the same adapter (e.g. SFT's, in GRPO)
        from peft import PeftModel

        tokenizer, base = load_local(adapter_base(init))
        return tokenizer, PeftModel.from_pretrained(base, str(init), is_trainable=True)
    if init:
        tokenizer, model = load_local(init)
    elif cfg.model == "tiny":
        tokenizer, model = tiny_model(cfg.seed)
    elif cfg.model == "smollm2":
        tokenizer, model = load_smollm2()
    else:
        tokenizer, model = load_local(cfg.model)
    if cfg.lora_rank:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules="all-linear"),
        )
    return tokenizer, model


def make_accelerator(cfg: TrainConfig):
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    from agent.rollout.models import stable_attention

    stable_attention()
    precision = cfg.mixed_precision
    if precision == "auto":
        precision = (
            "bf16"
            if (not cfg.cpu and torch.cuda.is_available() and torch.cuda.is_bf16_supported())
            else "no"
        )
    accelerator = Accelerator(cpu=cfg.cpu, mixed_precision=precision)
    set_seed(cfg.seed)
    return accelerator


def lr_lambda(cfg: TrainConfig, total_steps: int):
    """Warmup then constant, linear or cosine decay to 0 at `total_steps`."""

    def f(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        if cfg.lr_schedule == "constant":
            return 1.0
        progress = min(1.0, (step - cfg.warmup_steps) / max(1, total_steps - cfg.warmup_steps))
        return (
            1.0 - progress
            if cfg.lr_schedule == "linear"
            else 0.5 * (1.0 + math.cos(math.pi * progress))
        )

    return f


def make_optimizer(cfg: TrainConfig, model: torch.nn.Module, total_steps: int):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg, total_steps))


@dataclass(frozen=True)
class Batch:
    """Right-padded tensors of B trajectories; the (B, L-1) ones are shifted to score token t+1."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L)
    loss_mask: torch.Tensor  # (B, L-1) 1 on the policy's tokens
    old_logprobs: torch.Tensor  # (B, L-1) the sampler's log-probs (0 off the mask)

    def rows(self, mb: slice | list[int]) -> Batch:
        """Rows `mb`, cut to the longest of them: the columns past it are padding in every row,
        and no real token attends to a later column, so the cut changes no score. Each row
        was padded to the whole batch's longest: a micro-batch of one short row ran the model
        over the long row's length."""
        width = int(self.attention_mask[mb].sum(1).max())
        return Batch(
            self.input_ids[mb, :width],
            self.attention_mask[mb, :width],
            self.loss_mask[mb, : width - 1],
            self.old_logprobs[mb, : width - 1],
        )

    def to(self, device: torch.device) -> Batch:
        return Batch(
            *(
                t.to(device)
                for t in (self.input_ids, self.attention_mask, self.loss_mask, self.old_logprobs)
            )
        )


def collate(trajectories: Sequence[Trajectory], pad_id: int) -> Batch:
    """Token ids exactly as sampled (never re-tokenised), padded on the right."""
    seqs = [t.token_ids() for t in trajectories]
    length = max(len(s) for s in seqs)
    if length < 2:
        raise ConfigError(
            "trajectories need at least 2 tokens to score a next token; got an empty episode"
        )
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    att = torch.zeros((len(seqs), length), dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.float32)
    old = torch.zeros((len(seqs), length), dtype=torch.float32)
    for i, (t, s) in enumerate(zip(trajectories, seqs, strict=True)):
        n = len(s)
        ids[i, :n] = torch.tensor(s, dtype=torch.long)
        att[i, :n] = 1
        mask[i, :n] = torch.tensor(t.loss_mask(), dtype=torch.float32)
        old[i, :n] = torch.tensor(t.logprobs(), dtype=torch.float32)
    return Batch(ids, att, mask[:, 1:].contiguous(), old[:, 1:].contiguous())


def micro_batches(n: int, size: int, groups: Sequence[object] = ()) -> list[slice]:
    """Slices of at most `size` of `n` rows; with `groups` (a label per row, each group's rows
    contiguous) no slice spans two groups."""
    if not groups:
        return [slice(i, min(i + size, n)) for i in range(0, n, size)]
    out, start = [], 0
    for i in range(1, n + 1):
        if i == n or groups[i] != groups[start] or i - start == size:
            out.append(slice(start, i))
            start = i
    return out


def accumulate(
    accelerator: Any,
    optimizer: torch.optim.Optimizer,
    n: int,
    size: int,
    step: Callable[[slice], dict[str, float]],
    groups: Sequence[object] = (),
) -> tuple[dict[str, float], int]:
    """Forward and backward over `n` rows in micro-batches of `size` (never across `groups`, see
    `micro_batches`), summing what `step` returns; also the size it ended at, which the caller
    keeps for later updates.

    A micro-batch that runs out of GPU memory drops the update's gradients and starts it over at
    half the size (the same sums, the same update), as the policy's sampler does for generation.
    Under DDP the other processes would be left waiting in a collective, so there it raises.
    """
    while True:
        sums: dict[str, float] = {}
        try:
            for mb in micro_batches(n, size, groups):
                for k, v in step(mb).items():
                    sums[k] = sums.get(k, 0.0) + v
            return sums, size
        except torch.OutOfMemoryError:
            if size == 1 or accelerator.num_processes > 1:
                raise
            optimizer.zero_grad(set_to_none=True)
            size = (size + 1) // 2
        if torch.cuda.is_available():  # outside `except`: the failed pass's tensors are freed
            torch.cuda.empty_cache()


def global_sum(accelerator, value: float) -> float:
    """Sum a number over processes (token counts for the batch-level normalizer)."""
    if accelerator.num_processes == 1:
        return float(value)
    t = torch.tensor([float(value)], device=accelerator.device)
    return float(accelerator.reduce(t, reduction="sum").item())


def grad_norm(model: torch.nn.Module) -> float:
    norms = [p.grad.detach().float().norm() for p in model.parameters() if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms)).item()) if norms else 0.0


class RunDir:
    """Checkpoints and the metrics log of one run; only the main process writes."""

    def __init__(self, cfg: TrainConfig, accelerator) -> None:
        self.root = Path(cfg.output_dir)
        self.keep = cfg.keep_checkpoints
        self.accelerator = accelerator
        self.main = accelerator.is_main_process
        if self.main:
            (self.root / "checkpoints").mkdir(parents=True, exist_ok=True)
            save_config(cfg, self.root / "config.yaml")
        accelerator.wait_for_everyone()
        self.metrics_path = self.root / "metrics.jsonl"
        self._tb = _tensorboard(self.root / "tb") if self.main else None

    def checkpoints(self) -> list[Path]:
        """The complete checkpoints (their trainer state written last), oldest first."""
        done = [
            p
            for p in (self.root / "checkpoints").glob("step-*")
            if (p / "trainer_state.json").is_file()
        ]
        return sorted(done, key=lambda p: int(p.name.split("-")[1]))

    def latest_checkpoint(self) -> Path | None:
        done = self.checkpoints()
        return done[-1] if done else None

    def save(self, step: int, state: dict[str, Any]) -> Path:
        path = self.root / "checkpoints" / f"step-{step}"
        self.accelerator.save_state(str(path))
        if self.main:
            (path / "trainer_state.json").write_text(
                json.dumps({"step": step, **state}, sort_keys=True)
            )
            if self.keep:  # the new one is complete before any older one goes
                for old in self.checkpoints()[: -self.keep]:
                    shutil.rmtree(old)
        self.accelerator.wait_for_everyone()
        return path

    def resume(self) -> tuple[int, dict[str, Any]]:
        """Load the newest checkpoint; drop logged steps after it so the curve continues exactly."""
        path = self.latest_checkpoint()
        if path is None:
            if self.main and self.metrics_path.exists():
                self.metrics_path.unlink()
            self.accelerator.wait_for_everyone()
            return 0, {}
        self.accelerator.load_state(str(path))
        state = json.loads((path / "trainer_state.json").read_text())
        step = int(state.pop("step"))
        if self.main and self.metrics_path.exists():
            kept = [
                line
                for line in self.metrics_path.read_text().splitlines()
                if json.loads(line)["step"] <= step
            ]
            self.metrics_path.write_text("".join(line + "\n" for line in kept))
        self.accelerator.wait_for_everyone()
        return step, state

    def log(self, record: dict[str, Any]) -> None:
        if not self.main:
            return
        with self.metrics_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        if self._tb is not None:
            for k, v in record.items():
                if isinstance(v, int | float) and k != "step":
                    self._tb.add_scalar(k, v, record["step"])

    def rollouts(
        self, step: int, trajectories: Sequence[Trajectory], folder: str = "rollouts"
    ) -> Path:
        """This process's rollouts of an RL step, as `wikisim eval` writes trajectories: what the
        policy did, readable beside its curves (`rollouts/step-00001.rank0.jsonl`; the collapse
        guard's checks under `health/`)."""
        path = self.root / folder / f"step-{step:05d}.rank{self.accelerator.process_index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_trajectories(path, trajectories)
        return path

    def save_final(self, model: torch.nn.Module, tokenizer) -> Path:
        """A plain transformers folder (LoRA merged) that the policies can load; with LoRA, also
        `adapter/`, the adapter alone (a few MB, loadable by the policies too)."""
        out = self.root / "final"
        self.accelerator.wait_for_everyone()
        if self.main:
            save_plain(plain_model(self.accelerator, model), tokenizer, out)
            unwrapped = self.accelerator.unwrap_model(model)
            if hasattr(unwrapped, "peft_config"):
                from agent.rollout.models import save_adapter

                save_adapter(unwrapped, self.root / "adapter")
        self.accelerator.wait_for_everyone()
        return out


def plain_model(accelerator, model: torch.nn.Module) -> PreTrainedModel:
    """The trained weights as a plain transformers model: unwrapped from DDP, LoRA merged (a copy)."""
    unwrapped = accelerator.unwrap_model(model)
    if hasattr(unwrapped, "merge_and_unload"):
        import copy

        unwrapped = copy.deepcopy(unwrapped).merge_and_unload()
    return cast(PreTrainedModel, unwrapped)


def save_plain(model: PreTrainedModel, tokenizer, out: Path) -> Path:
    """save_pretrained into `out` through a temporary folder, so a reader never sees half a model."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _tensorboard(path: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional
        return None
    return SummaryWriter(str(path))


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    return (
        [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        if p.exists()
        else []
    )


def plot_curves(metrics_path: str | Path, png: str | Path, keys: Sequence[str]) -> Path | None:
    """One panel per logged key that has values; None when nothing was logged."""
    rows = read_metrics(metrics_path)
    keys = [k for k in keys if any(k in r for r in rows)]
    if not keys:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, len(keys))
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    for ax, k in zip(axes.flat, keys, strict=False):
        pts = [(r["step"], r[k]) for r in rows if k in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 30 else None)
        ax.set_title(k)
        ax.set_xlabel("step")
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return Path(png)
